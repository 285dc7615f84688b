model = Chain(Input(4), Dense(3), softmax)
