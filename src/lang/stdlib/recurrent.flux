# Recurrent layers. Each reads its state at the previous step as h{-1} (zeros at the
# first step of a sequence, or what the last call left when unrolled statefully) and
# sets it for this step; unroll(m, n) runs m over sequences of n steps.

net Recurrent(in, out) {            # h = tanh(x W + h{-1} U + b)
  W = param(in, out)
  U = param(out, out)
  b = param(1, out, init = zeros)
  torch(W = transpose(weight_ih_l0), U = transpose(weight_hh_l0), b = bias_ih_l0 + bias_hh_l0)   # nn.RNN
  h = state(out)
  x -> {
    h = tanh(x * W + h{-1} * U + b)
  }
}

# The gates side by side in the columns of W, U and b, in PyTorch's order: input i,
# forget f, cell g, output o (W is PyTorch's weight_ih transposed, U weight_hh
# transposed, b = bias_ih + bias_hh).
net LSTM(in, out) {
  W = param(in, 4 * out)
  U = param(out, 4 * out)
  b = param(1, 4 * out, init = zeros)
  torch(W = transpose(weight_ih_l0), U = transpose(weight_hh_l0), b = bias_ih_l0 + bias_hh_l0)   # nn.LSTM
  h = state(out)
  c = state(out)
  sequence(lstm(W, U, b, h, c))   # over a whole sequence: one lstm op, as the steps below compute
  x -> {
    z = x * W + h{-1} * U + b
    i = σ(chunk(z, 1, 4))
    f = σ(chunk(z, 2, 4))
    g = tanh(chunk(z, 3, 4))
    o = σ(chunk(z, 4, 4))
    c = f .* c{-1} + i .* g
    h = o .* tanh(c)
  }
}

# Gates in PyTorch's order: reset r, update z, new n. PyTorch's two biases stay apart
# (b with W, d with U), since r multiplies the hidden part of n with its bias.
net GRU(in, out) {
  W = param(in, 3 * out)
  b = param(1, 3 * out, init = zeros)
  U = param(out, 3 * out)
  d = param(1, 3 * out, init = zeros)
  torch(W = transpose(weight_ih_l0), b = bias_ih_l0, U = transpose(weight_hh_l0), d = bias_hh_l0)   # nn.GRU
  h = state(out)
  x -> {
    a = x * W + b
    u = h{-1} * U + d
    r = σ(chunk(a, 1, 3) + chunk(u, 1, 3))
    z = σ(chunk(a, 2, 3) + chunk(u, 2, 3))
    n = tanh(chunk(a, 3, 3) + r .* chunk(u, 3, 3))
    h = (1 .- z) .* n + z .* h{-1}
  }
}
