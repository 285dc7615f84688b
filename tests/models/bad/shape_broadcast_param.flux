net Shift(n) {
  s = param(5)
  x -> x + s
}
model = Chain(Input(3), Shift(3))
