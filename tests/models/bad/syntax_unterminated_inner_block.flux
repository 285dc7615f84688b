net Foo(n) {
  W = param(n, n)
  x -> {
    y = x * W
    relu(y)
}
model = Chain(Input(3), Foo(3))
