net Foo(n) {
  W = param(n, n)
  x -> x * W
}
model = Chain(Input(3), Foo(n == 3))
