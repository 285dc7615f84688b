# indices (B, 50) -> rows of a table (B, 50, 16) -> a distribution over 76 classes at each step
model = Chain(Input(50), Embedding(76, 16), Affine(16, 76), softmax)
