net Foo(n) {
  W = param(n, n)
  x -> x * W
}
m = Chain(Input(3), Foo(3))
