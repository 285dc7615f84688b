# A small GPT: causal self-attention of 4 heads over 16 positions, two blocks, width 32
# (the standard library's GPT; trained an epoch on the GPL before export, since no
# PyTorch module is imported for it)
model = Chain(Input(16), GPT(76, 32, layers = 2, heads = 4, context = 16))
