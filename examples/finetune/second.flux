# first.flux's body under a new head, for five other classes: fine-tuned from a
# checkpoint of first.flux with --init CKPT --partial, the body (1.body.*) is loaded
# and the head, named new_head here, starts from its initialisation
# (docs/training.md, "Fine-tuning").
net Classifier(body, new_head) {
  x -> softmax(new_head(body(x)))
}

model = Chain(Input(1, 28, 28), Classifier(
  Chain(Conv2D(1, 32, 3, pad = 1), BatchNorm(32), relu, MaxPool(2),    # (B, 32, 14, 14)
        Conv2D(32, 64, 3, pad = 1), BatchNorm(64), relu, MaxPool(2),   # (B, 64, 7, 7)
        flatten, Affine(3136, 128), BatchNorm(128), relu),             # (B, 128): the features
  Affine(128, 5)))
