net A(x = 1, y) { x -> x }
