relu = 3
model = Chain(Input(3), relu)
