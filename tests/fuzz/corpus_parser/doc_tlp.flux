# a template: parameters first, then the forward function
net Affine(in, out) {
  W = param(in, out)                # default init: glorot uniform
  b = param(1, out, init = zeros)
  x -> x * W + b
}

net TLP(first, second) {            # templates can take other models
  x -> {
    l1 = σ(first(x))
    softmax(second(l1))
  }
}

model = TLP(Affine(10, 20), Affine(20, 15))
