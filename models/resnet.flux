# A residual network for 28x28 images of 10 classes (Fashion-MNIST): a 3x3 stem, three
# stages of two of torchvision's basic blocks each (32, 64 and 128 channels at 28x28,
# 14x14 and 7x7; each stage after the first halves the size in its first block),
# global average pooling and the classifier.
# train: --epochs 13 --batch 128 --optim nesterov --lr 0.1 --wd 5e-4 --schedule cosine+warmup:468 --augment crop:4,flip --label-smoothing 0.1
model = Chain(
  Input(1, 28, 28),
  Conv2D(32, 3, pad = 1, bias = false), BatchNorm(), relu,   # (B, 32, 28, 28)
  ResidualBlock(32), ResidualBlock(32),                       # (B, 32, 28, 28)
  ResidualBlock(64, stride = 2), ResidualBlock(64),           # (B, 64, 14, 14)
  ResidualBlock(128, stride = 2), ResidualBlock(128),         # (B, 128, 7, 7)
  GlobalAvgPool(), Affine(10), softmax)
