model = Chain(Input(100), Affine(784, 128), relu)
