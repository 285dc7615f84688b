model = Chain(Affine(4), relu)
