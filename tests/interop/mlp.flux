# nn.Sequential(Linear(20, 32), ReLU(), Linear(32, 16), ReLU(), Linear(16, 5), Softmax(dim=1))
model = Chain(Input(20), Affine(32), relu, Affine(16), relu, Affine(5), softmax)
