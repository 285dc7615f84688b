net Foo(n) {
  W = param(n, n, init = normal(-1))
  x -> x * W
}
model = Chain(Input(3), Foo(3))
