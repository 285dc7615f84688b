model = Affine(3)
