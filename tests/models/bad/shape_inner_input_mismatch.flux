model = Chain(Input(3), Chain(Input(4), relu))
