net Ratio(n) {
  A = Affine(n, n)
  B = Affine(n, n)
  x -> A(x) / B(x)
}
model = Chain(Input(3), Ratio(3))
