a = x @ y
