net Acc(in) {
  s = state(in)
  x -> {
    s = s{-2} + x
  }
}
model = unroll(Chain(Input(3), Acc()), 4)
