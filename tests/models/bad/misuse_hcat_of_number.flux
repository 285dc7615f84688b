model = Chain(Input(12), x -> hcat(x, 3))
