# Semicolons, comments everywhere, a trailing comma, a newline inside ( ).
net Tiny(in, out) { W = param(in, out); x -> x * W }   # one line
model = Chain(
  Input(3),      # features
  Tiny(4),       # in = 3 from the chain
  relu,
  Tiny(
    2,
  ),
)
