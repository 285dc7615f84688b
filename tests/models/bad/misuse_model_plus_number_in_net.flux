net Foo(n) {
  A = Affine(n, n)
  x -> A + 1
}
model = Chain(Input(3), Foo(3))
