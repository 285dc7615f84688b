m = Chain(Input(2), x -> x .* 2, (x) -> (x, x), (a, b) -> a .+ b)
f = x -> y -> x{-1}
