model = Chain(Input(3), relu) + 1
