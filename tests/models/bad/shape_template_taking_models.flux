net TLP(first, second) {
  x -> {
    l1 = σ(first(x))
    softmax(second(l1))
  }
}

model = TLP(Affine(10, 20), Affine(21, 15))
