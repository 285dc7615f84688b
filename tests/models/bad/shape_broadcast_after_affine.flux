net Scale(n) {
  g = param(1, n)
  x -> x .* g
}
model = Chain(Input(3), Affine(4), Scale(3))
