model = Chain(Input(3, 0), relu)
