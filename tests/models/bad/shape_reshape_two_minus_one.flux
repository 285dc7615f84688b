model = Chain(Input(12), x -> reshape(x, -1, -1))
