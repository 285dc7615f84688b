model = Chain(Input(4), input -> relu(inptu))
