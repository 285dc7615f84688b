net Foo(3) {
  x -> x
}
model = Foo(3)
