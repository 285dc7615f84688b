model = Chain(Input(4), 3 -> relu(x))
