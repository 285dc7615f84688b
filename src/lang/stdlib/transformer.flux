# The pieces of a transformer, as in GPT-2: blocks of causal self-attention and of an
# MLP, each reading its input through a LayerNorm and added back to it (pre-norm
# residuals). Values flow as (B, T, d): a batch of sequences of T positions of width d.

net MLPBlock(in, mult = 4, drop = 0) {     # x -> gelu(x W1 + b1) W2 + b2, mult times wider inside
  up = Affine(in, mult * in)
  down = Affine(mult * in, in)
  x -> dropout(down(gelu(up(x))), drop)
}

# Attention of `heads` heads of in / heads each; position t looks at positions 1..t.
net CausalSelfAttention(in, heads, drop = 0) {
  qkv = Affine(in, 3 * in)                 # queries, keys and values side by side
  out = Affine(in, in)
  x -> {
    z = qkv(x)
    q = transpose(reshape(chunk(z, 1, 3), -1, heads, in / heads), 1, 2) .* (1 / sqrt(in / heads))
    k = transpose(reshape(chunk(z, 2, 3), -1, heads, in / heads), 1, 2)    # (B, heads, T, in / heads)
    v = transpose(reshape(chunk(z, 3, 3), -1, heads, in / heads), 1, 2)
    a = dropout(softmax(q * transpose(k, 2, 3), causal = true), drop)      # (B, heads, T, T)
    out(reshape(transpose(a * v, 1, 2), -1, in))
  }
}

net TransformerBlock(in, heads, mult = 4, drop = 0) {
  norm1 = LayerNorm(in)
  attention = CausalSelfAttention(in, heads, drop = drop)
  norm2 = LayerNorm(in)
  mlp = MLPBlock(in, mult, drop = drop)
  x -> {
    h = x + dropout(attention(norm1(x)), drop)
    h + mlp(norm2(h))
  }
}

# A language model: indices x (B, T) in 0..vocab-1, T at most context, to the
# probabilities of the next index at every position, (B, T, vocab).
net GPT(vocab, d, layers, heads, context, drop = 0) {
  embed = Embedding(vocab, d, std = 0.02)      # as GPT-2: N(0, 0.02), as the positions
  P = param(context, d, init = normal(0.02))   # a learned vector for each position
  blocks = repeat(TransformerBlock(d, heads, drop = drop), layers)
  norm = LayerNorm(d)
  head = Affine(d, vocab)
  x -> softmax(head(norm(blocks(dropout(embed(x) + positions(P, x), drop)))))
}
