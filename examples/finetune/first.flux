# A classifier in two parts, a convolutional body that makes 128 features of an image
# and a head that classifies them, for five classes of Fashion-MNIST: trained with
# --only-classes 0-4 it is the first model of docs/training.md's fine-tuning example.
# Its parameters are named 1.body.* and 1.head.* (cflux summary lists them).
net Classifier(body, head) {
  x -> softmax(head(body(x)))
}

model = Chain(Input(1, 28, 28), Classifier(
  Chain(Conv2D(1, 32, 3, pad = 1), BatchNorm(32), relu, MaxPool(2),    # (B, 32, 14, 14)
        Conv2D(32, 64, 3, pad = 1), BatchNorm(64), relu, MaxPool(2),   # (B, 64, 7, 7)
        flatten, Affine(3136, 128), BatchNorm(128), relu),             # (B, 128): the features
  Affine(128, 5)))
