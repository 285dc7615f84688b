net Foo(n) {
  W = param(0, n)
  x -> x * W
}
model = Chain(Input(3), Foo(3))
