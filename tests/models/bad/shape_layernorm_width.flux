# LayerNorm(16) after an Affine of 32 outputs
model = Chain(
  Input(10, 8),
  Affine(32),
  LayerNorm(16), gelu)
