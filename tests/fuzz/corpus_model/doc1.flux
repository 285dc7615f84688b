net Dense(in, out, scale = 1) {
  W = param(in, out)                  # glorot uniform unless told otherwise
  b = param(1, out, init = zeros)
  x -> relu(x * W + b) .* scale
}

model = Chain(Input(20), Dense(32), Dense(10, scale = 0.5), softmax)
