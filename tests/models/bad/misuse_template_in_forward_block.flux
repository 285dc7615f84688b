net Deep(n) {
  x -> {
    A = Affine(n, n)
    A(x)
  }
}
model = Chain(Input(3), Deep(3))
