# A tiny character LSTM, for test_compat: its checkpoint was written by cflux 45d6874.
model = unroll(Chain(Input(), Embedding(76, 4), LSTM(4), Affine(76), softmax), 5)
