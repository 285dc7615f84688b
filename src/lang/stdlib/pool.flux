net MaxPool(k, stride = 0) {        # the largest of each k x k window; stride 0: k
  x -> maxpool(x, k, stride = stride)
}

net AvgPool(k, stride = 0) {        # the mean of each k x k window; stride 0: k
  x -> avgpool(x, k, stride = stride)
}

net GlobalAvgPool() {               # (B, C, H, W) -> (B, C): the mean of each channel
  x -> globalavgpool(x)
}

net Dropout(p) {                    # in training, zero each element with probability p
  x -> dropout(x, p)
}
