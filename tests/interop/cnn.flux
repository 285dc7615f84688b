# nn.Sequential(Conv2d(1, 4, 3, padding=1), BatchNorm2d(4), ReLU(), MaxPool2d(2),
#               Conv2d(4, 8, 3), BatchNorm2d(8), ReLU(), MaxPool2d(2),
#               Flatten(), Linear(32, 10), Softmax(dim=1))
model = Chain(
  Input(1, 12, 12),
  Conv2D(4, 3, pad = 1), BatchNorm(), relu, MaxPool(2),
  Conv2D(8, 3), BatchNorm(), relu, MaxPool(2),
  flatten, Affine(10), softmax)
