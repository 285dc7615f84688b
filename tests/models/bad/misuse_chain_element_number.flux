model = Chain(Input(3), 4, relu)
