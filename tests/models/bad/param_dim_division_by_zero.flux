net Foo(n) {
  W = param(n, n / 0)
  x -> x * W
}
model = Chain(Input(3), Foo(3))
