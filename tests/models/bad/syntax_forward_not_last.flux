net Foo(n) {
  x -> x * W
  W = param(n, n)
}
model = Chain(Input(3), Foo(3))
