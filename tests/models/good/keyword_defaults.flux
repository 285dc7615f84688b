# Defaults, keywords in any order, arithmetic on arguments, every initialiser.
net Layer(in, out, gain = 1, bias_init = zeros, hidden = out * 2) {
  W1 = param(in, hidden, init = normal(0.02))
  W2 = param(hidden, out, init = uniform(0.1))
  b = param(1, out, init = bias_init)
  g = param(1, out, init = ones)
  x -> (relu(x * W1) * W2 + b) .* g .* gain
}

model = Chain(Input(6),
              Layer(8),
              Layer(5, hidden = 3, gain = 0.5),
              Layer(4, bias_init = glorot),
              logsoftmax)
