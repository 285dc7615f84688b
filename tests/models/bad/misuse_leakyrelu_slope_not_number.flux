model = Chain(Input(12), x -> leakyrelu(x, relu))
