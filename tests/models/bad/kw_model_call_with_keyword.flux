net Foo(n) {
  A = Affine(n, n)
  x -> A(x, k = 1)
}
model = Chain(Input(3), Foo(3))
