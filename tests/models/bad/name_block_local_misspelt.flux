net Two(n) {
  A = Affine(n, n)
  x -> {
    hidden = relu(A(x))
    softmax(hiden)
  }
}
model = Chain(Input(4), Two(4))
