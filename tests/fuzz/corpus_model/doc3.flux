net Gate(n) {
  proj = Affine(n, n)
  mix = param(n, n, init = normal(0.01))
  (x, h) -> {
    g = σ(proj(x) + h * mix)
    (g .* x, hcat(x, h))              # two outputs
  }
}

model = Gate(8)
