# models/mlp.flux
model = Chain(
  Input(784),
  Affine(128), relu,
  Affine(64), relu,
  Affine(10), softmax)
