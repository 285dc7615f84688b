model = Affine(2.5, 3)
