# café (latin-1)
model = Chain(Input(3), relu)
