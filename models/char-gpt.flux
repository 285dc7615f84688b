# A character-level GPT: each of 128 characters embedded with its position, four
# transformer blocks of causal self-attention (4 heads) and an MLP, width 128, and at
# every position a softmax over 115 characters predicting the next one. Each position
# sees only those before it, so a window of 128 teaches 128 predictions at once; the
# windows start anywhere in the text. The settings below are for Debian's fortunes
# (2.5 MB of English in 43 files, 115 distinct bytes with the files' end marker; the
# last 10% of each file held out): 12 epochs, about 17 minutes on 2 cores.
#   cflux train models/char-gpt.flux --data text:/usr/share/games/fortunes --save gpt.ckpt
#   cflux sample models/char-gpt.flux --params gpt.ckpt --length 2000
# train: --epochs 12 --batch 16 --lr 0.004 --optim adamw --wd 0.1 --schedule cosine+warmup:200 --clip 1
model = Chain(Input(128), GPT(115, 128, layers = 4, heads = 4, context = 128))
