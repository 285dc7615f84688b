net Foo(n) {
  x -> x * param(n, n)
}
model = Chain(Input(3), Foo(3))
