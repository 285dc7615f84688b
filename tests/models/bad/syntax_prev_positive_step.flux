net R(n) {
  y = state(n)
  x -> {
    y = x + y{1}
  }
}
model = Chain(Input(3), R(3))
