net Foo(n = 3, m) {
  W = param(n, m)
  x -> x * W
}
model = Chain(Input(3), Foo(3, 4))
