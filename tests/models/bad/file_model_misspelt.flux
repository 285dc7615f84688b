modle = Chain(Input(4), relu)
