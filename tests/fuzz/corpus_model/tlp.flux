# Two layers, a template that takes other models (docs/notation.md's example).
net TLP(first, second) {
  x -> {
    l1 = σ(first(x))
    softmax(second(l1))
  }
}

model = TLP(Affine(10, 20), Affine(20, 15))
