# stride 4 leaves a 2x2 map: the next 3x3 kernel has no room
model = Chain(
  Input(1, 8, 8),
  Conv2D(4, 3, stride = 4), relu,
  Conv2D(8, 3), relu,
  flatten, Affine(10), softmax)
