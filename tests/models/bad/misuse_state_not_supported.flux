net Recurrent(in, out) {
  Wxy = param(in, out)
  y = state(out)
  x -> tanh(x * Wxy)
}
model = Chain(Input(3), Recurrent(4))
