model = Chain(Input(3), relu)
xÎ