model = Chain(Input(3), x -> dropout(x, 0.5))
