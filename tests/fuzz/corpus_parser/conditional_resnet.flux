# Residual networks' blocks, as torchvision's ResNet has them; the names of the
# sub-models are those of its modules, so that torch(...) reads its state_dict.

# torchvision's BasicBlock: two 3x3 convolutions (the first with the stride) with batch
# normalisation, added to the shortcut, then relu. The shortcut is x itself, or, when
# the shape changes (a stride, other channels), a 1x1 convolution with the stride and
# batch normalisation (torchvision's `downsample`).
net ResidualBlock(in, out, stride = 1) {
  conv1 = Conv2D(in, out, 3, stride = stride, pad = 1, bias = false)
  bn1 = BatchNorm(out)
  conv2 = Conv2D(out, out, 3, pad = 1, bias = false)
  bn2 = BatchNorm(out)
  downsample = (stride != 1 || in != out ? Chain(Conv2D(in, out, 1, stride = stride, bias = false), BatchNorm(out))
                                         : identity)
  x -> relu(bn2(conv2(relu(bn1(conv1(x))))) + downsample(x))
}
