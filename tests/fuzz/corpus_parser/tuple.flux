net Split(n) {
  (x, h) -> (h, x)
}
m = Split(3)(a, b)(c)
