# Naming `in` by keyword turns the Chain's filling-in off: out is then missing.
model = Chain(Input(4), Affine(in = 4))
