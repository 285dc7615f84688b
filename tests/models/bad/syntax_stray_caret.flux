model = Chain(Input(4), x -> x ^ 2)
