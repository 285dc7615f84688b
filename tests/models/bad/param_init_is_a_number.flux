net Foo(n) {
  W = param(n, n, init = 3)
  x -> x * W
}
model = Chain(Input(3), Foo(3))
