model = unroll(Chain(Input(3), Affine(3)), 5)
