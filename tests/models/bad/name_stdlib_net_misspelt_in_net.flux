net Block(n) {
  A = Afine(n, n)
  x -> relu(A(x))
}
model = Chain(Input(3), Block(3))
