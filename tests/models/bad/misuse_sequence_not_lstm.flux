net Cell(in, out) {
  W = param(in, out)
  h = state(out)
  sequence(gru(W, h))
  x -> { h = tanh(x * W + h{-1}) }
}
model = unroll(Chain(Input(3), Cell(4)), 5)
