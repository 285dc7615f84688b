# sequences of 40 steps given to a model unrolled over 50
model = Chain(
  Input(40, 65),
  unroll(Chain(Input(65), LSTM(32), Affine(65), softmax), 50))
