model = Chain(Input(3), x -> 3(x))
