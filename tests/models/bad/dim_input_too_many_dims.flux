model = Chain(Input(2, 2, 2, 2, 2, 2, 2), relu)
