# the second convolution is written for 3 channels; the first makes 8
model = Chain(
  Input(1, 12, 12),
  Conv2D(8, 3), relu,
  Conv2D(3, 16, 3), relu)
