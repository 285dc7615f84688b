net Foo(n) {
  W = param(n, relu)
  x -> x * W
}
model = Chain(Input(3), Foo(3))
