net Foo(n) {
  W = param(n, n)
  f = x -> x * W
}
model = Chain(Input(3), Foo(3))
