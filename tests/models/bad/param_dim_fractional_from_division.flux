net Half(in) {
  W = param(in, in / 2)
  x -> x * W
}
model = Chain(Input(5), Half(5))
