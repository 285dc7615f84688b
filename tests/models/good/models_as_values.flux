# Models bound at top level, reused by name, passed to templates.
encoder = Chain(Affine(10, 6), relu)
decoder = Chain(Affine(6, 10), σ)

net AutoEncoder(enc, dec) {
  x -> {
    z = enc(x)
    (dec(z), z)
  }
}

model = Chain(Input(2, 5), flatten, AutoEncoder(encoder, decoder))
