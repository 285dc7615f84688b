# a 7x7 kernel on a 5x5 image
model = Chain(
  Input(1, 5, 5),
  Conv2D(4, 7),
  relu)
