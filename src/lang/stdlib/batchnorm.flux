net BatchNorm(in, eps = 1e-5, momentum = 0.1) {   # per channel: (x - mean) / sqrt(var + eps) γ + β
  γ = param(in, init = ones)
  β = param(in, init = zeros)
  mean = stat(in)                  # running statistics: updated in training,
  var = stat(in, init = ones)      # used in evaluation, never trained
  torch(γ = weight, β = bias, mean = running_mean, var = running_var)   # nn.BatchNorm1d/2d(in)
  x -> batchnorm(x, γ, β, mean, var, eps = eps, momentum = momentum)
}
