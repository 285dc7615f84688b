net Gate(n) {
  σ2 = param(n, n)
  x -> x * σ2
}
model = Chain(Input(3), Gate(3), re�lu)
