# A small residual network: the standard library's ResidualBlock with both shortcuts
# (identity, and the projection of a stride and more channels), no convolution bias.
model = Chain(Input(1, 28, 28), Conv2D(8, 3, pad = 1, bias = false), BatchNorm(), relu,
              ResidualBlock(8), ResidualBlock(16, stride = 2), GlobalAvgPool(), Affine(10), softmax)
