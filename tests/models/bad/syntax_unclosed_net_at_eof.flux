net Foo(n) {
  W = param(n, n)
  x -> x * W
