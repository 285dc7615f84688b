model = Chain(Input(65), LSTM(256), Affine(65), softmax)
