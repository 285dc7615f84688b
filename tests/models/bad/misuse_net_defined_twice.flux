net Foo(n) {
  x -> x
}
net Foo(m) {
  x -> relu(x)
}
model = Chain(Input(3), Foo(3))
