model = Chain(Input(3), x -> relu(x, x))
