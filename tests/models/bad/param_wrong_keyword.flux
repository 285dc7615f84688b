net Foo(n) {
  W = param(n, n, inti = zeros)
  x -> x * W
}
model = Chain(Input(3), Foo(3))
