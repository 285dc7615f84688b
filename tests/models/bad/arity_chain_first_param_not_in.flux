# Inside a Chain only a first parameter named `in` is filled in with the input size.
net Dense(hidden, out) {
  W = param(hidden, out)
  x -> relu(x * W)
}
model = Chain(Input(4), Dense(3))
