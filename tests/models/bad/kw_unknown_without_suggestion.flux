net Dense(in, out, scale = 1) {
  W = param(in, out)
  x -> relu(x * W) .* scale
}
model = Chain(Input(4), Dense(3, momentum = 2))
