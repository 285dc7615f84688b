# nn.Sequential(nn.LayerNorm(12), nn.Linear(12, 24), nn.GELU(approximate='tanh'),
#               nn.Linear(24, 12), nn.GELU(), nn.Linear(12, 5), nn.Softmax(dim=-1)),
# position by position over 6 steps of 12 features: (B, 6, 12)
model = Chain(Input(6, 12), LayerNorm(), Affine(24), gelu, Affine(12), x -> gelu(x, exact = true), Affine(5), softmax)
