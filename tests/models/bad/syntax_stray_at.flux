model = Chain(Input(4), @relu)
