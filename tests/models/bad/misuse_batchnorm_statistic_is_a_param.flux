# running statistics must be state (stat), not parameters
net BN(in) {
  g = param(in, init = ones)
  b = param(in, init = zeros)
  mean = param(in)
  var = stat(in, init = ones)
  x -> batchnorm(x, g, b, mean, var)
}
model = Chain(Input(4), BN())
