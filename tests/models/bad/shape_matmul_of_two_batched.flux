model = Chain(Input(3), x -> x * x)
