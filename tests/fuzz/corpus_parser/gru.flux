net GRU(in, out) {
  Wz = param(in, out); Uz = param(out, out); bz = param(1, out, init = zeros)
  Wh = param(in, out); Uh = param(out, out); bh = param(1, out, init = zeros)
  h = state(out)
  x -> {
    z = σ(x * Wz + h{-1} * Uz + bz)
    h′ = tanh(x * Wh + (z .* h{-1}) * Uh + bh)
    h = (1 .- z) .* h{-1} .+ z .* h′
  }
}
model = unroll(Chain(Input(10), GRU(32)), 8, stateful = false)
