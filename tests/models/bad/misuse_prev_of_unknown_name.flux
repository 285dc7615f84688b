net Echo(n) {
  W = param(n, n)
  x -> x * W + y{-1}
}
model = Chain(Input(3), Echo(3))
