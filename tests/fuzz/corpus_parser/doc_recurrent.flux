# recurrence: y{-1} is the value y had at the previous step
net Recurrent(in, out) {
  Wxy = param(in, out)
  Wyy = param(out, out)
  by  = param(1, out, init = zeros)
  y   = state(out)                  # starts at zeros
  x -> {
    y = tanh(x * Wxy + y{-1} * Wyy + by)
  }
}

model = unroll(Chain(Input(65), LSTM(256), Affine(65), softmax), 50)
