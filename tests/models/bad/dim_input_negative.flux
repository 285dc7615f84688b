model = Chain(Input(-1), relu)
