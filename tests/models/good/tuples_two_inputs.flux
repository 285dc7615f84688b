# Two inputs, tuple outputs; a tuple flowing from one Chain element to the next.
net Gate(n) {
  proj = Affine(n, n)
  mix = param(n, n, init = normal(0.01))
  (x, h) -> {
    g = σ(proj(x) + h * mix)
    (g .* x, hcat(x, h))
  }
}

net Merge(n) {
  down = Affine(2 * n, n)
  (a, b) -> a - down(b)
}

net Pair(n) {
  steps = Chain(Gate(n), Merge(n), softmax)
  (x, h) -> (steps(x, h), x .* h)
}

model = Pair(8)
