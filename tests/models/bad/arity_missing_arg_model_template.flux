net Mix(a, b) {
  x -> a(x) + b(x)
}
model = Chain(Input(4), Mix(Affine(4, 4)))
