model = Chain(Input(4), x -> x ? relu(x) : x)
