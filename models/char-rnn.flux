# A character-level language model: each character's index is embedded, an LSTM of
# 128 reads the sequence, and at every step a softmax over the 76 characters of the
# GPL's text predicts the next one. Trained on 50 characters at a time, its state
# carried from one batch to the next (unroll is stateful by default).
#   cflux train models/char-rnn.flux --data text:/usr/share/common-licenses/GPL-3 --save rnn.ckpt
#   cflux sample models/char-rnn.flux --params rnn.ckpt
# train: --epochs 40 --batch 32 --lr 0.003
model = unroll(Chain(Input(), Embedding(76, 64), LSTM(128), Affine(76), softmax), 50)
