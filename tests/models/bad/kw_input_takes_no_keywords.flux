model = Chain(Input(3, batch = 4), relu)
