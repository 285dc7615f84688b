# A character-level GPT: each of 64 characters embedded with its position, four
# transformer blocks of causal self-attention (4 heads) and an MLP, width 128, and at
# every position a softmax over the 76 characters of the GPL's text predicting the
# next one. Each position sees only those before it, so training on windows of 64
# teaches 64 predictions at once; the windows start anywhere in the text.
#   cflux train models/char-gpt.flux --data text:/usr/share/common-licenses/GPL-3 --save gpt.ckpt
#   cflux sample models/char-gpt.flux --params gpt.ckpt
# train: --epochs 120 --batch 32 --lr 0.002 --optim adamw --wd 0.2 --schedule cosine+warmup:100 --clip 1
model = Chain(Input(64), GPT(76, 128, layers = 4, heads = 4, context = 64, drop = 0.25))
