net A(in, out) {
  W = param(in, out)
  b = param(1= out)
  x -> x }
