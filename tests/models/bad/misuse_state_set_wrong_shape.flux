net Acc(in) {
  W = param(in, 2 * in)
  U = param(in, in)
  s = state(in)
  x -> {
    s = x * W          # (B, 6) into a state of (B, 3)
    s{-1} * U
  }
}
model = unroll(Chain(Input(3), Acc()), 4)
