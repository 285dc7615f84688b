model = Chain(Input(3), (x, h) -> x + h)
