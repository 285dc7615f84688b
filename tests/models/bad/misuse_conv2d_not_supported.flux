net C(n) {
  K = param(n, n, 3, 3)
  b = param(n)
  x -> conv2d(x, K, b)
}
model = Chain(Input(1, 8, 8), C(1))
