net C(n) {
  K = param(n, n, 3, 3)
  b = param(n, 1, 1)
  x -> conv2d(x, K, b)
}
model = Chain(Input(3, 8, 8), C(2))
