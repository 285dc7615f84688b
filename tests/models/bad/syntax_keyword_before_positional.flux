model = Chain(Input(4), Affine(out = 3, 4))
