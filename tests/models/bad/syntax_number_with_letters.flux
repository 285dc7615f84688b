model = Chain(Input(4), Affine(2x))
