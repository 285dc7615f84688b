model = Chain(Input(1, 8, 8), x -> maxpool(x, 9))
