model = Chain(Input(3), x -> embedding(x))
