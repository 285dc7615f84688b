net Conv2D(in, out, k, stride = 1, pad = 0, bias = true) {   # y = x ⊛ K + b: x (B, in, H, W)
  K = param(out, in, k, k)                      # glorot uniform over in·k·k and out·k·k
  b = param(out, 1, 1, init = zeros)            # with bias = false never read, so never made
  torch(K = weight, b = bias)                   # nn.Conv2d(in, out, k, bias = bias)
  x -> bias ? conv2d(x, K, b, stride = stride, pad = pad) : conv2d(x, K, stride = stride, pad = pad)
}
