net Block(in, out, stride = 1) {
  short = stride ? identity : Affine(in, out)
  x -> short(x)
}

model = Chain(Input(4), Block(4, stride = 2))
