model = Chain(Input(4), x -> )
