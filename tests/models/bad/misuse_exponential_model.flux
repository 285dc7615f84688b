# Each Twice doubles the calls below it: 2^22 affine layers, refused by the size limit.
net Twice(m) {
  x -> m(m(x))
}
model = Chain(Input(4), Twice(Twice(Twice(Twice(Twice(Twice(Twice(Twice(Twice(Twice(Twice(Twice(Twice(Twice(Twice(Twice(Twice(Twice(Twice(Twice(Twice(Twice(Affine(4, 4))))))))))))))))))))))))
