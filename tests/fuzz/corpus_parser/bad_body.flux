net A(x) {
  W = 1
}
