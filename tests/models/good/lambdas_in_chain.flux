# Lambdas as Chain elements, mixed with functions and layers.
model = Chain(Input(4, 6),
              flatten,
              Affine(32),
              x -> leakyrelu(x, 0.2),
              x -> reshape(x, 4, -1),
              x -> mean(x),
              x -> exp(-x) ./ (1 .+ exp(-x)),
              x -> {
                y = x .* 2 - 1
                y .* y
              },
              Affine(3),
              softmax)
