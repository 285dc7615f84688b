net Table() {
  E = param(4, 2, 1)
  x -> embedding(x, E)
}
model = Chain(Input(3), Table())
