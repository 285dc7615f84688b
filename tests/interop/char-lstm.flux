# a character model: embed = nn.Embedding(20, 8), lstm = nn.LSTM(8, 16, batch_first=True),
# out = nn.Linear(16, 20); softmax(out(lstm(embed(x))[0]), dim=-1) over 12 characters
model = unroll(Chain(Input(), Embedding(20, 8), LSTM(16), Affine(20), softmax), 12)
