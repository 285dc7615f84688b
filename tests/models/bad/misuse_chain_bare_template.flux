model = Chain(Input(3), Affine)
