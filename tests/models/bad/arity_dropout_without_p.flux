model = Chain(Input(4), Dropout(), Affine(3), softmax)
