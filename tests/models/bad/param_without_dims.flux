net Foo(n) {
  W = param()
  x -> x * W
}
model = Chain(Input(3), Foo(3))
