net Cell(in, out) {
  W = param(in, 4 * out)
  U = param(out, 4 * out)
  b = param(1, 4 * out)
  h = state(out)
  c = state(out)
  sequence(lstm(W, U, b, h, U))
  x -> { h = tanh(x * W + h{-1} * U + b) }
}
model = unroll(Chain(Input(3), Cell(4)), 5)
