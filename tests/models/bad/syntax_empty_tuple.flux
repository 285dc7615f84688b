model = Chain(Input(3), x -> ())
