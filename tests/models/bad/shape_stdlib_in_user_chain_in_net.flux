net Stack(n) {
  body = Chain(Affine(n, 8), relu, Affine(9, 2))
  x -> softmax(body(x))
}
model = Chain(Input(5), Stack(5))
