net Foo(n) {
  W = param(n, n)
  x -> {
    y = x * W
    y
  }
}
net Bar(n) {
  F = Foo(n)
  x -> F(x) + y
}
model = Chain(Input(3), Bar(3))
