model = Chain(Input(3), x -> dropout(x, 1.5))
