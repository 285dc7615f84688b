# the same with rnn = nn.RNN(8, 16, batch_first=True) (tanh)
model = unroll(Chain(Input(), Embedding(20, 8), Recurrent(16), Affine(20), softmax), 12)
