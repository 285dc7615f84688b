net Affine(in, out) {               # y = x W + b: x (B, in), W (in, out), b (1, out)
  W = param(in, out)                # glorot uniform
  b = param(1, out, init = zeros)
  torch(W = transpose(weight), b = bias); sequence(each)   # nn.Linear(in, out); each step alike
  x -> x * W + b
}
