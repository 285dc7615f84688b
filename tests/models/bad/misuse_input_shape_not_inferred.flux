model = x -> relu(x)
