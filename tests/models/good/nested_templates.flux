# Templates that take templates' instances, three levels deep.
net Dense(in, out, scale = 1) {
  W = param(in, out)
  b = param(1, out, init = zeros)
  x -> relu(x * W + b) .* scale
}

net Residual(inner) {
  x -> x + inner(x)
}

net Block(n, depth_scale = 0.5) {
  r1 = Residual(Dense(n, n, scale = depth_scale))
  r2 = Residual(Chain(Affine(n, n), tanh))
  x -> r2(r1(x))
}

model = Chain(Input(16), Block(16), Block(16, depth_scale = 0.25), Affine(4), softmax)
