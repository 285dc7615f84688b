# a module with lstm = nn.LSTM(6, 16, batch_first=True) and out = nn.Linear(16, 9),
# softmax(out(lstm(x)[0]), dim=-1) over 12 steps of 6 features
model = unroll(Chain(Input(6), LSTM(16), Affine(9), softmax), 12)
