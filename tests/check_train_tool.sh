#!/bin/sh
# check_train_tool.sh CFLUX - `cflux train`, `eval` and `predict` on small data made
# here: records (--log, --plot, --json), repeatable checkpoints, --resume, and one
# clear error line with exit 1 for each kind of bad input; text data in nats/char.
set -u
tool=$1 name=train-tool
. "$(dirname "$0")/train_setup.sh"
train() { "$tool" train "$t/m.flux" --data "csv:$t/train.csv,$t/test.csv" --batch 32 --seed 3 "$@"; }

# a run with every record
train --epochs 6 --lr 0.01 --log "$t/log.csv" --plot "$t/plot.svg" --json --save "$t/a.ckpt" > "$t/out" 2> "$t/err"
rc=$?
[ $rc -eq 0 ] && ok || bad "train exit $rc: $(cat "$t/err")"
tail -n 1 "$t/out" | grep -q '^{"epochs": 6, .*"test_accuracy": 0\.[0-9]*, .*"samples_per_sec": .*"params": 131}$' && ok || bad "json: $(tail -n 1 "$t/out")"
grep -q '^epoch  6/6  train loss' "$t/err" && ok || bad "no per-epoch line on stderr (--json)"
[ "$(wc -l < "$t/log.csv")" -eq 7 ] && head -n 1 "$t/log.csv" | grep -q '^epoch,train_loss,train_accuracy,val_loss' && ok || bad "log.csv"
grep -q '<svg' "$t/plot.svg" && grep -q 'polyline' "$t/plot.svg" && grep -q 'test accuracy' "$t/plot.svg" && ok || bad "plot.svg"

# same seed, same bits; resume from epoch 3 of 6 ends where the uninterrupted run ends
train --epochs 6 --lr 0.01 --quiet --save "$t/b.ckpt" > /dev/null && cmp -s "$t/a.ckpt" "$t/b.ckpt" && ok || bad "two runs differ"
train --epochs 6 --lr 0.01 --quiet --stop-after 3 --save "$t/half.ckpt" >/dev/null
cmp -s "$t/a.ckpt" "$t/half.ckpt" && bad "stopped run equals the whole run" || ok
train --epochs 6 --lr 0.01 --quiet --resume "$t/half.ckpt" --save "$t/d.ckpt" >/dev/null
cmp -s "$t/a.ckpt" "$t/d.ckpt" && ok || bad "resumed run differs"

# eval and predict with the checkpoint
"$tool" eval "$t/m.flux" --params "$t/a.ckpt" --data "csv:$t/train.csv,$t/test.csv" | grep -q 'on the test set (100 samples): loss [0-9.]*, accuracy 0\.' && ok || bad "eval"
cut -d, -f2- "$t/test.csv" > "$t/inputs.csv"
[ "$("$tool" predict "$t/m.flux" --params "$t/a.ckpt" "$t/inputs.csv" | grep -c '^[0-9]*: class [0-2] (p = 0\.')" -eq 100 ] && ok || bad "predict"
# a model of two outputs (a tuple): predict gives both, side by side
printf 'net Two(in) {\n  W = param(in, 3)\n  V = param(in, 2)\n  x -> (softmax(x * W), x * V)\n}\nmodel = Chain(Input(4), Two())\n' > "$t/two.flux"
"$tool" train "$t/two.flux" --data "csv:$t/train.csv,$t/test.csv" --epochs 2 --quiet --save "$t/two.ckpt" > /dev/null
[ "$("$tool" predict "$t/two.flux" --params "$t/two.ckpt" "$t/inputs.csv" |
   grep -cE '^[0-9]+: class [0-2] \(p = 0\.[0-9]+\) \| -?[0-9.e+-]+ -?[0-9.e+-]+$')" -eq 100 ] && ok || bad "predict, two outputs"
"$tool" predict "$t/two.flux" --params "$t/two.ckpt" "$t/inputs.csv" --json |
  grep -qE '^\[\[\{"class": [0-2], "probability": [0-9.e-]+\}, \[-?[0-9.e+-]+, -?[0-9.e+-]+\]\], \[\{' && ok || bad "predict --json, two outputs"

# bad input: exit 1 and one line naming the file
one_line() {  # one_line PATTERN COMMAND...
  pat=$1; shift
  "$@" > /dev/null 2> "$t/err"; rc=$?
  if [ $rc -eq 1 ] && [ "$(wc -l < "$t/err")" -eq 1 ] && grep -q -- "$pat" "$t/err"; then ok
  else bad "$* -> exit $rc: $(cat "$t/err")"; fi
}
head -c 300 "$t/a.ckpt" > "$t/cut.ckpt"
one_line "cut.ckpt" "$tool" eval "$t/m.flux" --params "$t/cut.ckpt" --data "csv:$t/test.csv"
printf '\020\000\000\000\000\000\000\000{"a": [1, 2, 3' > "$t/junk.ckpt"
one_line "junk.ckpt" "$tool" eval "$t/m.flux" --params "$t/junk.ckpt" --data "csv:$t/test.csv"
echo 'model = Chain(Input(4), Affine(8), tanh, Affine(3), softmax)' > "$t/other.flux"
one_line "a.ckpt: parameter '1.W' is (4, 8) in the model but (4, 16) in the file" \
  "$tool" eval "$t/other.flux" --params "$t/a.ckpt" --data "csv:$t/test.csv"
echo 'model = Chain(Input(4), Affine(16), tanh, tanh, Affine(3), softmax)' > "$t/renamed.flux"
one_line "a.ckpt: the parameters do not match the model: missing" \
  "$tool" eval "$t/renamed.flux" --params "$t/a.ckpt" --data "csv:$t/test.csv"
one_line "a.ckpt: parameter" "$tool" train "$t/other.flux" --data "csv:$t/train.csv" --resume "$t/a.ckpt"
sed '5s/.*/1,0.5,abc,0.1,0.2/' "$t/train.csv" > "$t/badrow.csv"
one_line "badrow.csv:5: 'abc' is not a number" "$tool" train "$t/m.flux" --data "csv:$t/badrow.csv"
sed '7s/.*/1,0.5,0.1/' "$t/train.csv" > "$t/ragged.csv"
one_line "ragged.csv:7:" "$tool" train "$t/m.flux" --data "csv:$t/ragged.csv"
sed '9s/^[0-9]/7/' "$t/train.csv" > "$t/range.csv"
one_line "range.csv: label 7 of sample 7 is out of range for the model's 3 classes" \
  "$tool" train "$t/m.flux" --data "csv:$t/range.csv"
CFLUX_DATA="$t/nowhere" one_line "nowhere" "$tool" train "$t/m.flux"
one_line "missing.csv" "$tool" train "$t/m.flux" --data "csv:$t/missing.csv"
# IDX images and labels of different lengths
printf '\000\000\010\003\000\000\000\002\000\000\000\002\000\000\000\002\001\002\003\004\005\006\007\010' > "$t/img.idx"
printf '\000\000\010\001\000\000\000\003\000\001\002' > "$t/lab.idx"
echo 'model = Chain(Input(4), Affine(3), softmax)' > "$t/idx.flux"
one_line "img.idx has 2 images, .*lab.idx has 3 labels" "$tool" train "$t/idx.flux" --data "idx:$t/img.idx,$t/lab.idx"
echo 'model = Chain(Input(4), Affine(3), relu)' > "$t/nosoft.flux"
one_line "train.csv: each sample has one label but the model's output has 3 numbers; a classifier ends with softmax, and this model ends with relu at .*nosoft.flux:1:36" \
  "$tool" train "$t/nosoft.flux" --data "csv:$t/train.csv"
one_line "classifier models must end with softmax, but this one ends with relu at .*nosoft.flux:1:36" \
  "$tool" train "$t/nosoft.flux" --data "csv:$t/train.csv" --loss xent
"$tool" train "$t/m.flux" --epochs 0 > /dev/null 2>&1; [ $? -eq 2 ] && ok || bad "--epochs 0 is bad usage"
"$tool" train "$t/m.flux" --optim rmsprop > /dev/null 2>&1; [ $? -eq 2 ] && ok || bad "unknown optimizer is bad usage"

# --limit-batches: 3 batches of 16 an epoch and an evaluation; eval with the same limit
# gives the run's test loss; a run stopped after epoch 1 resumes to the same bits
train --epochs 2 --batch 16 --limit-batches 3 --log "$t/lim.csv" --save "$t/lim.ckpt" > "$t/out" 2> "$t/err"
grep -q '^training .*batch 16, limited to 3 batches per epoch and per evaluation, ' "$t/out" && ok ||
  bad "--limit-batches: header: $(head -n 1 "$t/out") $(cat "$t/err")"
want=$(sed -n 's/^2,[^,]*,[^,]*,,,\([^,]*\),.*/\1/p' "$t/lim.csv")
"$tool" eval "$t/m.flux" --params "$t/lim.ckpt" --data "csv:$t/train.csv,$t/test.csv" --batch 16 --limit-batches 3 --json > "$t/ev"
grep -q "^{\"samples\": 48, \"limit_batches\": 3, \"batch\": 16, \"loss\": $want, " "$t/ev" && ok ||
  bad "--limit-batches: eval: $(cat "$t/ev"), the run's test loss $want"
"$tool" eval "$t/m.flux" --params "$t/lim.ckpt" --data "csv:$t/train.csv,$t/test.csv" --batch 16 --limit-batches 3 |
  grep -q 'on the test set (48 samples of 100: 3 batches of 16, spread over it): loss ' && ok || bad "--limit-batches: eval's line"
train --epochs 2 --batch 16 --limit-batches 3 --stop-after 1 --save "$t/lim1.ckpt" --quiet > /dev/null
train --epochs 2 --batch 16 --limit-batches 3 --resume "$t/lim1.ckpt" --save "$t/lim2.ckpt" --quiet > /dev/null 2> "$t/err"
cmp -s "$t/lim.ckpt" "$t/lim2.ckpt" && [ ! -s "$t/err" ] && ok || bad "--limit-batches: the resumed run differs: $(cat "$t/err")"
train --epochs 2 --batch 16 --resume "$t/lim1.ckpt" --quiet > /dev/null 2> "$t/err"
grep -q 'the limit of batches an epoch changes from 3 to none' "$t/err" && ok || bad "--limit-batches: resumed without: $(cat "$t/err")"

# text data: losses per character, chars/s, the vocabulary kept for eval
echo 'model = Chain(Input(8), x -> reshape(x, 8, 1), Affine(30), softmax)' > "$t/char.flux"
for i in $(seq 40); do echo 'the quick brown fox jumps over the lazy dog'; done > "$t/words.txt"
"$tool" train "$t/char.flux" --data "text:$t/words.txt" --epochs 2 --batch 16 --json --save "$t/char.ckpt" > "$t/out" 2> "$t/err"
grep -q '^training .*: 197 train, 21 test sequences of 8 characters' "$t/err" && ok || bad "text: header: $(cat "$t/out" "$t/err")"
grep -q '^epoch  2/2  train loss [0-9.]* nats/char acc 0\.[0-9]* | test loss [0-9.]* nats/char acc 0\.[0-9]* | .* chars/s$' "$t/err" \
  && ok || bad "text: epoch line: $(cat "$t/err")"
grep -q '^test loss [0-9.]* nats/char, accuracy 0\.' "$t/err" && grep -q '"chars_per_sec": ' "$t/out" && ok || bad "text: summary"
# eval reads the text in the run's batches: the run's own test loss, to the digit
want=$(sed -n 's/^test loss \([0-9.]*\) nats.char.*/\1/p' "$t/err")
"$tool" eval "$t/char.flux" --params "$t/char.ckpt" --data "text:$t/words.txt" | grep -q "loss $want nats/char" \
  && ok || bad "text: eval's loss is not the run's $want: $("$tool" eval "$t/char.flux" --params "$t/char.ckpt" --data "text:$t/words.txt")"
"$tool" eval "$t/char.flux" --params "$t/char.ckpt" --data "text:$t/words.txt" | grep -q 'on the test set (21 sequences): loss [0-9.]* nats/char, accuracy 0\.' \
  && ok || bad "text: eval"

# sample_checks NAME MODEL: train MODEL on the words, then sample it: the same seed,
# the same text; another seed, another; the prime, then 60 characters of the text's
# and a newline
sample_checks() {
  name=$1 model=$2
  "$tool" train "$t/$model.flux" --data "text:$t/words.txt" --epochs 3 --batch 8 --lr 0.01 --save "$t/$model.ckpt" \
    > "$t/out" 2> "$t/err" && ok || bad "$name: training: $(cat "$t/out" "$t/err")"
  draw() { "$tool" sample "$t/$model.flux" --params "$t/$model.ckpt" --length 60 --seed "$1" --prime "the " > "$2" 2> "$t/err"; }
  draw 4 "$t/s1" && ok || bad "$name: $(cat "$t/err")"
  draw 4 "$t/s2"
  draw 5 "$t/s3"
  cmp -s "$t/s1" "$t/s2" && ok || bad "$name: the same seed gave other text"
  cmp -s "$t/s1" "$t/s3" && bad "$name: another seed gave the same text" || ok
  [ "$(head -c 4 "$t/s1")" = "the " ] && [ "$(wc -c < "$t/s1")" -eq 65 ] && ! LC_ALL=C grep -q '[^a-z .\n]' "$t/s1" \
    && ok || bad "$name: $(cat "$t/s1")"
}
# sample: a recurrent character model trained on the same text, then generated from
echo 'model = unroll(Chain(Input(), x -> reshape(x, 1), Affine(8), GRU(16), Affine(30), softmax), 8)' > "$t/rnn.flux"
sample_checks sample rnn
one_line "the prime text has 'Q', which the training text did not have" \
  "$tool" sample "$t/rnn.flux" --params "$t/rnn.ckpt" --prime "Quick"
"$tool" train "$t/m.flux" --data "csv:$t/train.csv" --epochs 1 --save "$t/csv.ckpt" > /dev/null 2>&1
one_line "csv.ckpt: no text vocabulary: sample needs a checkpoint of a run on text" \
  "$tool" sample "$t/rnn.flux" --params "$t/csv.ckpt"
one_line "sample needs a character model" "$tool" sample "$t/m.flux" --params "$t/rnn.ckpt"
# a corpus of a folder: its files sorted, each end marked; the header says what the test
# set is; sample prints the end marker as a line of its own and starts as a file does
mkdir -p "$t/corpus/sub" "$t/corpus/.git"
i=0
while read -r line; do i=$((i + 1)); printf '%s\n' "$line" > "$t/corpus/$(printf %02d $((i % 7)))-$i.txt"; done < "$t/words.txt"
mv "$t/corpus/00-7.txt" "$t/corpus/sub/"
echo 'not text' > "$t/corpus/.git/HEAD"
"$tool" train "$t/rnn.flux" --data "text:$t/corpus" --epochs 3 --batch 8 --lr 0.01 --save "$t/corpus.ckpt" > "$t/out" 2> "$t/err"
grep -q "^text: 40 files, 1800 characters, each file's end marked by the byte 0x1e$" "$t/out" &&
  grep -q "^test: the last 10% of each file, 160 characters in all$" "$t/out" &&
  grep -q '^task: the next character, of 29 distinct in the text' "$t/out" && ok || bad "corpus: the header: $(cat "$t/out" "$t/err")"
"$tool" sample "$t/rnn.flux" --params "$t/corpus.ckpt" --length 200 > "$t/s1" 2> "$t/err" &&
  ! LC_ALL=C grep -q "$(printf '\036')" "$t/s1" && ok || bad "corpus: sample: $(cat "$t/s1" "$t/err")"
"$tool" sample "$t/rnn.flux" --params "$t/corpus.ckpt" --length 1 --prime "$(printf 'the\036')" > "$t/s2" 2> "$t/err"
[ "$(head -n 2 "$t/s2")" = "$(printf 'the\n--- end of a file ---')" ] && ok || bad "corpus: sample's end marker: $(cat "$t/s2" "$t/err")"
mkdir "$t/nothing"
one_line "nothing: the folder is empty" "$tool" train "$t/rnn.flux" --data "text:$t/nothing"

# sample: a GPT, which carries no state, by recomputing its window
echo 'model = Chain(Input(8), GPT(30, 16, layers = 1, heads = 2, context = 8))' > "$t/gpt.flux"
sample_checks "sample gpt" gpt
# with its keys and values cached (the default) and recomputing the window: the same text,
# past the window (8) many times over, each time it fills going on from its last quarter
"$tool" sample "$t/gpt.flux" --params "$t/gpt.ckpt" --length 300 --seed 7 > "$t/c1" 2> "$t/err" &&
  "$tool" sample "$t/gpt.flux" --params "$t/gpt.ckpt" --length 300 --seed 7 --no-cache > "$t/c2" 2>> "$t/err" &&
  [ "$(wc -c < "$t/c1")" -eq 302 ] && cmp -s "$t/c1" "$t/c2" && ok || bad "sample gpt cached: $(cat "$t/c1" "$t/c2" "$t/err")"
# examples/generate.c: the same model through the C API alone, greedy; past the window
gen="$(dirname "$tool")/example_generate"
"$gen" "$t/gpt.flux" "$t/gpt.ckpt" "the " 40 > "$t/g1" 2> "$t/err" && [ "$(head -c 4 "$t/g1")" = "the " ] &&
  [ "$(wc -c < "$t/g1")" -eq 45 ] && ! LC_ALL=C grep -q '[^a-z .\n]' "$t/g1" && ok || bad "example_generate: $(cat "$t/g1" "$t/err")"
# a GPT with a layer that mixes the positions after its attention: refused with the cache,
# naming --no-cache
echo 'model = Chain(Input(8), Embedding(30, 16), TransformerBlock(16, 2), x -> reshape(x, 128), Affine(128, 240),
  x -> reshape(x, 8, 30), softmax)' > "$t/gmix.flux"
"$tool" train "$t/gmix.flux" --data "text:$t/words.txt" --epochs 1 --batch 16 --save "$t/gmix.ckpt" > /dev/null 2>&1
"$tool" sample "$t/gmix.flux" --params "$t/gmix.ckpt" > /dev/null 2> "$t/err"; rc=$?
[ $rc -eq 1 ] && head -n 1 "$t/err" | grep -q "gmix.flux: the model does not run one position at a time (T = 1 instead of 8): reshape" &&
  tail -n 1 "$t/err" | grep -q -- "--no-cache runs the whole window again" && ok || bad "sample gmix: exit $rc: $(cat "$t/err")"
one_line "the model's output at a position depends on the positions after it" \
  "$tool" sample "$t/gmix.flux" --params "$t/gmix.ckpt" --no-cache   # a look ahead: refused either way
# a per-position model is causal too; one that mixes positions is refused, not read wrong
"$tool" sample "$t/char.flux" --params "$t/char.ckpt" --length 10 > /dev/null 2> "$t/err" && ok || bad "sample per position: $(cat "$t/err")"
echo 'model = Chain(Input(8), x -> reshape(x, 8, 1), Affine(30), x -> transpose(x, 1, 2), Affine(8), x -> transpose(x, 1, 2), softmax)' > "$t/mix.flux"
"$tool" train "$t/mix.flux" --data "text:$t/words.txt" --epochs 1 --batch 16 --save "$t/mix.ckpt" > /dev/null 2>&1
one_line "the model's output at a position depends on the positions after it" \
  "$tool" sample "$t/mix.flux" --params "$t/mix.ckpt"

# a model file's own settings ("# train:" line), under the command line's
printf '# a model with its settings\n# train: --epochs 1 --batch 8\nmodel = Chain(Input(4), Affine(3), softmax)\n' > "$t/own.flux"
"$tool" train "$t/own.flux" --data "csv:$t/train.csv" > "$t/out" 2>&1
grep -q "^settings from .*own.flux: --epochs 1 --batch 8 (the command line's win)$" "$t/out" && grep -q '^epoch  1/1 ' "$t/out" \
  && ok || bad "model settings: $(cat "$t/out")"
"$tool" train "$t/own.flux" --data "csv:$t/train.csv" --epochs 2 > "$t/out" 2>&1
grep -q '^epoch  2/2 ' "$t/out" && ok || bad "model settings under the command line: $(cat "$t/out")"
printf '# train: --epochs lots\nmodel = Chain(Input(4), Affine(3), softmax)\n' > "$t/badown.flux"
"$tool" train "$t/badown.flux" --data "csv:$t/train.csv" > /dev/null 2> "$t/err"; rc=$?
[ $rc -eq 2 ] && grep -q "needs a whole number" "$t/err" && ok || bad "bad model settings: exit $rc: $(cat "$t/err")"
# label smoothing from the model's own line, said in the header
printf '# train: --epochs 1 --batch 8 --label-smoothing 0.1\nmodel = Chain(Input(4), Affine(3), softmax)\n' > "$t/smooth.flux"
"$tool" train "$t/smooth.flux" --data "csv:$t/train.csv" > "$t/out" 2>&1
grep -q '^training .*smooth.flux .* lr 0.001, schedule cosine, label smoothing 0.1, batch 8' "$t/out" && grep -q '^epoch  1/1 ' "$t/out" \
  && ok || bad "label smoothing from the model's settings: $(cat "$t/out")"

# an epoch line leaves out what was not measured (no validation split, a regression's
# accuracy) and writes a large loss in %g's way (it was 'val loss - acc - | ... 33710207303.6800')
awk 'BEGIN { srand(3); print "rooms,area,price"; for (i = 0; i < 40; i++) { r = int(1 + rand() * 5);
  a = int(30 + rand() * 150); printf "%d,%d,%d\n", r, a, 50000 + 20000 * r + 1500 * a } }' > "$t/house.csv"
echo 'model = Chain(Input(2), Affine(8), relu, Affine(1))' > "$t/house.flux"
"$tool" train "$t/house.flux" --data "csv:$t/house.csv,$t/house.csv" --label-col price --epochs 1 > "$t/out" 2> "$t/err"
grep -qE '^epoch  1/1  train loss [0-9]\.[0-9]+e\+[0-9]+ \| test loss [0-9]\.[0-9]+e\+[0-9]+ \| [0-9.]+ s, [0-9]+ samples/s$' \
  "$t/out" && grep -qE '^test loss [0-9]\.[0-9]+e\+[0-9]+ \(mean squared error\)$' "$t/out" && ok ||
  bad "epoch line of a regression: $(cat "$t/out" "$t/err")"

# the header gives the split's counts, the schedule, the weight decay and the
# standardisation; a warm-up longer than the run is noted; --stop-after ends with the
# line to go on (without its --stop-after), and the resumed run's header says so
train --epochs 2 --val 0.2 --wd 0.01 --normalize --schedule cosine+warmup:100 --save "$t/p.ckpt" --stop-after 1 \
  > "$t/out" 2> "$t/err"
grep -q '^training .*: 240 train, 60 validation, 100 test samples, 131 weights, adam lr 0.001 wd 0.01, schedule cosine+warmup:100, inputs standardised, batch 32, ' "$t/out" &&
  grep -q '^note: the warm-up of 100 steps is longer than the whole run (16 steps, 8 an epoch)' "$t/err" &&
  grep -q "^resume with: cflux train .* --save $t/p.ckpt --resume $t/p.ckpt\$" "$t/err" && ! grep -q 'resume with: .*--stop-after' "$t/err" \
  && ok || bad "header, warm-up, --stop-after: $(cat "$t/out" "$t/err")"
train --epochs 2 --val 0.2 --wd 0.01 --normalize --schedule cosine+warmup:100 --save "$t/p.ckpt" --resume "$t/p.ckpt" \
  > "$t/out" 2> "$t/err"
grep -q "^resuming $t/p.ckpt after epoch 1 of 2\$" "$t/out" && grep -q '^epoch  2/2 ' "$t/out" && ! grep -q '^epoch  1/2 ' "$t/out" \
  && ok || bad "resumed header: $(cat "$t/out" "$t/err")"

# lr-find: the table and the suggestion, the same for the same seed; JSON; the plot; bad usage
lrfind() { "$tool" lr-find "$t/m.flux" --data "csv:$t/train.csv" --batch 32 --seed 3 "$@"; }
lrfind --plot "$t/lr.svg" > "$t/lr1" 2> "$t/err" && mv "$t/lr.svg" "$t/lr1.svg" && lrfind --plot "$t/lr.svg" > "$t/lr2" 2>&1 &&
  cmp -s "$t/lr1" "$t/lr2" && cmp -s "$t/lr1.svg" "$t/lr.svg" &&
  grep -q '^   1.000e-07  ' "$t/lr1" && grep -q '<- suggested' "$t/lr1" && grep -q '^train with: cflux train .*--lr [0-9.e-]*$' "$t/lr1" &&
  grep -q '<svg' "$t/lr.svg" && grep -q 'polyline' "$t/lr.svg" && grep -q 'suggested' "$t/lr.svg" \
  && ok || bad "lr-find: $(cat "$t/lr1" "$t/err")"
lrfind --json --optim sgd --start 1e-3 --end 100 --steps 50 |
  grep -qE '^\{"model": .*"steps": 50, "steps_run": [0-9]+, "diverged": true, "lr": \[0.001, .*"suggested_lr": [0-9.e-]+, "min_loss_lr": [0-9.e-]+' \
  && ok || bad "lr-find --json: $(lrfind --json --optim sgd --start 1e-3 --end 100 --steps 50 2>&1)"
lrfind --start 1 --end 0.1 > /dev/null 2> "$t/err"; rc=$?
[ $rc -eq 2 ] && grep -q 'the rates must rise' "$t/err" && ok || bad "lr-find --start above --end: exit $rc: $(cat "$t/err")"
# its train-with line repeats every option that chose the data, the loss and the
# optimizer (the label last here: pasted without --label-col it would train on column
# 0), takes what train takes (--normalize, --wd), and runs as it is, pasted
awk -F, 'BEGIN { OFS = "," } { print $2, $3, $4, $5, $1 }' "$t/train.csv" > "$t/last csv"
"$tool" lr-find "$t/m.flux" --data "csv:$t/last csv" --label-col label --features a,b,c,d --loss xent --normalize \
  --optim momentum --momentum 0.8 --wd 0.001 --seed 4 --steps 20 > "$t/lrl" 2> "$t/err"
line=$(sed -n 's/^train with: cflux train //p' "$t/lrl")
case "$line" in
  *"--data 'csv:$t/last csv' --label-col label --features a,b,c,d --loss xent --normalize --optim momentum --momentum 0.8 --wd 0.001 --seed 4 --lr "*)
    ok ;;
  *) bad "lr-find: the train-with line: $(cat "$t/lrl" "$t/err")" ;;
esac
eval "\"\$tool\" train $line --epochs 1 --quiet" > "$t/out" 2> "$t/err" &&
  grep -q '^train accuracy 0\.' "$t/out" && ok || bad "lr-find: its train-with line pasted: $(cat "$t/out" "$t/err")"

# class names, early stopping and the best epoch, the report page (its code under the
# sanitizers here; tests/check_report.sh opens a Fashion-MNIST one in Chromium)
printf 'a wins\nb wins\nc wins\n' > "$t/names.txt"
train --epochs 12 --lr 1e-12 --schedule const --val 0.2 --patience 2 --keep-best "$t/best.ckpt" --classes "$t/names.txt" \
  --report "$t/r.html" --save "$t/last.ckpt" --json > "$t/es" 2> "$t/err"
best=$(sed -n 's/^best epoch \([0-9]*\): validation loss .*, kept in .*best.ckpt$/\1/p' "$t/err")
last=$(sed -n 's/^stopped early after epoch \([0-9]*\): the validation loss has not improved for 2 epochs$/\1/p' "$t/err")
[ -n "$best" ] && [ -n "$last" ] && [ "$last" -eq $((best + 2)) ] && [ "$last" -lt 12 ] &&
  grep -q "\"best_epoch\": $best, \"stopped_early\": true" "$t/es" && ok || bad "early stopping: $(cat "$t/es" "$t/err")"
"$tool" eval "$t/m.flux" --params "$t/best.ckpt" --data "csv:$t/train.csv,$t/test.csv" --json > "$t/ev" 2>&1 &&
  grep -q '"classes": \["a wins", "b wins", "c wins"\], "confusion": \[\[' "$t/ev" && ok || bad "eval: class names: $(cat "$t/ev")"
"$tool" eval "$t/m.flux" --params "$t/best.ckpt" --data "csv:$t/train.csv,$t/test.csv" --top 2 > "$t/ev" 2>&1 &&
  grep -q 'top-2 accuracy 0\.[0-9]*$' "$t/ev" && grep -q '^  2 c wins ' "$t/ev" && grep -q 'macro average' "$t/ev" \
  && ok || bad "eval --top: $(cat "$t/ev")"
# its per-class table in columns: each row's precision ends where the header's does
awk '/ precision / { end = index($0, "precision") + 8; next }
  end && match($0, /[0-9]\.[0-9][0-9][0-9][0-9]/) { rows++; if (RSTART + RLENGTH - 1 != end) off++ }
  END { exit !(end && rows >= 4 && !off) }' "$t/ev" && ok || bad "eval: the table's columns: $(cat "$t/ev")"
cut -d, -f2- "$t/test.csv" | head -n 4 > "$t/in.csv"
"$tool" predict "$t/m.flux" --params "$t/best.ckpt" "$t/in.csv" --top 2 > "$t/pr" 2>&1 &&
  grep -q '^0: class [0-2] [abc] wins (p = 0\.[0-9]*), class [0-2] [abc] wins (p = ' "$t/pr" && ok || bad "predict --top 2: $(cat "$t/pr")"
grep -q '<h2>Per class</h2>' "$t/r.html" && grep -q 'c wins' "$t/r.html" && grep -q 'Finished: [0-9]* epochs, stopped early' "$t/r.html" \
  && ok || bad "the report of the run"
# --keep-best without --patience: all epochs run, and the file is the best epoch's (its
# eval gives that epoch's test loss, not the last epoch's)
train --epochs 10 --lr 0.3 --schedule const --val 0.2 --keep-best "$t/kb.ckpt" > "$t/kb" 2> "$t/err"
best=$(sed -n 's/^best epoch \([0-9]*\): validation loss .*, kept in .*kb.ckpt$/\1/p' "$t/kb")
want=$(sed -n "s/^epoch *$best\/10 .* | test loss \([0-9.]*\) acc .*/\1/p" "$t/kb")
last=$(sed -n 's/^epoch 10\/10 .* | test loss \([0-9.]*\) acc .*/\1/p' "$t/kb")
got=$("$tool" eval "$t/m.flux" --params "$t/kb.ckpt" --data "csv:$t/train.csv,$t/test.csv" 2>&1 |
  sed -n 's/^.* on the test set (100 samples): loss \([0-9.]*\), .*/\1/p')
[ -n "$best" ] && [ "$best" -lt 10 ] && [ -n "$want" ] && [ "$want" != "$last" ] && [ -f "$t/kb.ckpt" ] &&
  [ "$got" = "$want" ] && ok || bad "--keep-best without --patience: best epoch '$best', eval '$got', want '$want': $(cat "$t/err")"
train --epochs 2 --patience 2 > /dev/null 2> "$t/err"; rc=$?
[ $rc -eq 1 ] && grep -q 'watches the validation loss: hold out a validation split (--val)' "$t/err" && ok || bad "--patience without --val: exit $rc"
printf 'one\ntwo\n' > "$t/two.txt"
train --epochs 1 --classes "$t/two.txt" > /dev/null 2> "$t/err"; rc=$?
[ $rc -eq 1 ] && grep -q 'two.txt: 2 class names, but the model.s output gives 3 classes' "$t/err" && ok || bad "--classes of 2: exit $rc: $(cat "$t/err")"

echo "train tool: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
