net LayerNorm(in, eps = 1e-5) {     # per row of the last dimension: (x - mean) / sqrt(var + eps) γ + β
  γ = param(in, init = ones)
  β = param(in, init = zeros)
  torch(γ = weight, β = bias); sequence(each)   # nn.LayerNorm(in); each step alike
  x -> layernorm(x, γ, β, eps = eps)
}
