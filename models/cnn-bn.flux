# A convolutional network with batch normalisation and dropout for 28x28 images of
# 10 classes (Fashion-MNIST): two blocks of 3x3 convolutions, each normalised, then
# 2x2 max-pooling; a dense layer with dropout; the classifier.
model = Chain(
  Input(1, 28, 28),
  Conv2D(32, 3, pad = 1), BatchNorm(), relu, MaxPool(2),   # (B, 32, 14, 14)
  Conv2D(64, 3, pad = 1), BatchNorm(), relu, MaxPool(2),   # (B, 64, 7, 7)
  flatten, Dropout(0.25),
  Affine(128), BatchNorm(), relu, Dropout(0.25),
  Affine(10), softmax)
