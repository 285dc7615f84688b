model = Chain(Input(3), x -> Affine(3, 3)(x))
