net Foo(n) {
  x -> n(x)
}
model = Chain(Input(3), Foo(3))
