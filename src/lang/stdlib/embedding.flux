net Embedding(vocab, dim) {         # rows of E picked by index: x (B, ...) in 0..vocab-1 -> (B, ..., dim)
  E = param(vocab, dim, init = normal(1))   # N(0, 1), as PyTorch's nn.Embedding
  torch(E = weight); sequence(each)                 # nn.Embedding; each step alike
  x -> embedding(x, E)
}
