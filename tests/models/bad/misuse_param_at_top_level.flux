W = param(3, 3)
model = Chain(Input(3), x -> x * W)
