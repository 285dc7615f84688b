model = Chain(Input(12), x -> reshape(x, 5, 2))
