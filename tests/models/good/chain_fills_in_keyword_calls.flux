# Inside a Chain, `in` is filled in however the other arguments are given:
# Affine(out = 8) is Affine(4, 8), Layer(gain = 0.5, out = 3) is Layer(8, 3, 0.5).
net Layer(in, out, gain = 1) {
  W = param(in, out)
  x -> (x * W) .* gain
}

model = Chain(Input(4), Affine(out = 8), relu, Layer(gain = 0.5, out = 3), softmax)
