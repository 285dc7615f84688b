# clamp, exported as ONNX Clip with its bounds as constant inputs: both bounds, and
# each alone (the other at its default, -inf or +inf).
model = Chain(Input(20), Affine(16), x -> clamp(x, 0, 6), Affine(8), x -> clamp(x, lo = -0.5),
              x -> clamp(x, hi = 0.5), Affine(5), softmax)
