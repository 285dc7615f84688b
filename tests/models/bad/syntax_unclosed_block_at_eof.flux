model = Chain(Input(3), x -> {
  y = relu(x)
  y
