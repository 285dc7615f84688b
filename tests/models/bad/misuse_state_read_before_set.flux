net Acc(in) {
  s = state(in)
  x -> {
    y = s + x          # s is this step's value: not set yet (s{-1} is the last step's)
    s = y
  }
}
model = unroll(Chain(Input(3), Acc()), 4)
