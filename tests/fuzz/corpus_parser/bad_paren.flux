model = Affine(3 4)
