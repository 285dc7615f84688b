# No Input: the input shape comes from its first use (x * W).
net Head(in, out) {
  W = param(in, out)
  x -> {
    h = x * W
    (softmax(h), sum(h))
  }
}

model = Head(7, 3)
