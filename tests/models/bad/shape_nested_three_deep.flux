net Inner(n, m) {
  W = param(n, m)
  x -> x * W
}
net Middle(n) {
  I = Inner(n + 1, n)
  x -> relu(I(x))
}
net Outer(n) {
  M = Middle(n)
  x -> {
    h = M(x)
    softmax(h)
  }
}
model = Chain(Input(6), Outer(6))
