net Foo(n) {
  W = param(n, n)
  x -> W(x)
}
model = Chain(Input(3), Foo(3))
