# A small convolutional network for 28x28 images of 10 classes (Fashion-MNIST): two
# blocks of a 5x5 convolution and a 2x2 max-pooling, then one dense layer.
model = Chain(
  Input(1, 28, 28),
  Conv2D(8, 5), relu, MaxPool(2),     # (B, 8, 12, 12)
  Conv2D(16, 5), relu, MaxPool(2),    # (B, 16, 4, 4)
  flatten, Affine(10), softmax)
