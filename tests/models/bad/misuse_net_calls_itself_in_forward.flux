net Loop(in) {
  x -> Loop(x)
}
model = Chain(Input(3), Loop(3))
