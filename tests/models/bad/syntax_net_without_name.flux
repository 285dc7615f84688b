net (n) {
  x -> x
}
model = Chain(Input(3), relu)
