model = Chain(Input(1, 28, 28), Conv2D(1, 8, 3), relu,
  Affine(10), softmax)
