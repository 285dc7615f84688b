# the same with rnn = nn.GRU(8, 16, batch_first=True)
model = unroll(Chain(Input(), Embedding(20, 8), GRU(16), Affine(20), softmax), 12)
