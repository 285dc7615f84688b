model = Chain(Input(3), () -> 3)
