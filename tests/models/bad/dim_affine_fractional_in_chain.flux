model = Chain(Input(4), Affine(2.5))
