relu(x)
