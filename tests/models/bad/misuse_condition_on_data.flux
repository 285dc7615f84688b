net Gate(in) {
  W = param(in, in)
  x -> mean(x * W) > 0 ? relu(x) : x
}

model = Chain(Input(4), Gate())
