model = Chain(Input(4), q)
