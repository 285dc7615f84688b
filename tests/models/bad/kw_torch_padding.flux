model = Chain(Input(1, 8, 8), Conv2D(1, 2, 3, padding = 1), relu, flatten, Affine(3), softmax)
