a = Chain(Input(3), relu)
model = a
model = Chain(Input(3), a)
