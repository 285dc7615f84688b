net R(n) {
  y = state(n)
  x -> y{-x}
}
model = Chain(Input(3), R(3))
