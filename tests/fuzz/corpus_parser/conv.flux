net Conv2D(in, out, k, stride = 1, pad = 0) {
  K = param(k, k, in, out)
  b = param(1, out, init = zeros)
  x -> conv2d(x, K, b, stride = stride, pad = pad)
}
model = Chain(Input(28, 28, 1), Conv2D(8, 3, pad = 1), relu, MaxPool(2), flatten, Affine(10), softmax)
