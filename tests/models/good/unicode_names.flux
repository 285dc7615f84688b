# Names in any script: Greek, subscripts, primes.
net Γ(n, α = 0.1) {
  Wₒ = param(n, n)
  β′ = param(1, n, init = zeros)
  x -> leakyrelu(x * Wₒ + β′, α)
}

net Σ(n) {
  γ₁ = Γ(n)
  γ₂ = Γ(n, α = 0.3)
  x -> σ(γ₁(x)) + tanh(γ₂(x))
}

model = Chain(Input(5), Σ(5), Affine(2), softmax)
