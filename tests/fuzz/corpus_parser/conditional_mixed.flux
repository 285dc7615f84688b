net B(in, s = 1) {
  f = (s != 1 || !(in <= 4) && true ? Affine(in, in) : identity)
  x -> in > 2 ? f(x) : x .* (s == 2 ? 0.5 : 1)
}
model = Chain(Input(4), B(s = 2), B())
bad = a < b < c
worse = p ? q
