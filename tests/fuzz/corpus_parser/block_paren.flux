m = Chain(
  Input(2),
  x -> {
    h = f(x,
      y)
    g(h)
  },
  relu)
