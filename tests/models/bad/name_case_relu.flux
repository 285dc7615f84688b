model = Chain(Input(4), Affine(3), Relu, softmax)
