net Dense(in, out) {
  W = param(in, out)
  b = param(1, out)
  x -> relu(x * W + b)
}
model = Chain(Input(10), Dense(12, 4))
