net Gate(n) {
  proj = Affine(n, n)
  mix = param(n, n + 1)
  (x, h) -> σ(proj(x) + h * mix)
}
model = Gate(8)
