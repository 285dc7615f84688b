model = (x, h) -> x + h
