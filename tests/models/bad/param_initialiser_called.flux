net Foo(n) {
  W = param(n, n, init = zeros(3))
  x -> x * W
}
model = Chain(Input(3), Foo(3))
