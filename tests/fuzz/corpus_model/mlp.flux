# The default model: a classifier for 28x28 images of 10 classes (Fashion-MNIST).
model = Chain(
  Input(784),
  Affine(128), relu,
  Affine(64), relu,
  Affine(10), softmax)
