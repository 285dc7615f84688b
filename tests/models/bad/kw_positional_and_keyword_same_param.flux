model = Chain(Input(4), Affine(4, 3, out = 3))
