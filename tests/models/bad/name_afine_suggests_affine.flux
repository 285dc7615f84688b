model = Chain(Input(4), Afine(3))
