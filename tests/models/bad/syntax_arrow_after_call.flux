model = Chain(Input(4), f(x) -> relu(x))
