model = Chain(Input(3), Affine(3, outt = 4))
