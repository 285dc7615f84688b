net Foo(n) {
  W = param(n, n, init = normal(std = 2))
  x -> x * W
}
model = Chain(Input(3), Foo(3))
