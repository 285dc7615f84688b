model = Chain(Affine(3, 3), Input(3))
