# BatchNorm(5) after a convolution of 8 channels
model = Chain(
  Input(1, 12, 12),
  Conv2D(8, 3),
  BatchNorm(5), relu)
