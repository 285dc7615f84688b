net Foo(n) {
  W = param(n, n)
}
model = Chain(Input(3), Foo(3))
