net Loop(n) {
  inner = Loop(n)
  x -> inner(x)
}
model = Chain(Input(3), Loop(3))
