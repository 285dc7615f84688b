net Ping(n) {
  p = Pong(n)
  x -> p(x)
}
net Pong(n) {
  p = Ping(n)
  x -> p(x)
}
model = Ping(3)
