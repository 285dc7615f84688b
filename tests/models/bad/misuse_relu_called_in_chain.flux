model = Chain(Input(3), relu(3))
