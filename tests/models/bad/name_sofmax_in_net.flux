net Head(n) {
  A = Affine(n, n)
  x -> sofmax(A(x))
}
model = Chain(Input(4), Head(4))
