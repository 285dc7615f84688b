net Dense(in, out) {
  W = param(in, ouut)
  x -> x * W
}
model = Chain(Input(4), Dense(5))
