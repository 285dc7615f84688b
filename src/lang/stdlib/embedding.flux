net Embedding(vocab, dim, std = 1) {   # rows of E picked by index: x (B, ...) in 0..vocab-1 -> (B, ..., dim)
  E = param(vocab, dim, init = normal(std))   # N(0, 1) unless told, as PyTorch's nn.Embedding
  torch(E = weight); sequence(each)                 # nn.Embedding; each step alike
  x -> embedding(x, E)
}
