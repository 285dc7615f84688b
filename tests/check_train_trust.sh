#!/bin/sh
# check_train_trust.sh CFLUX - what `cflux train`, `eval` and `predict` must never do
# to a user: resume at learning rate 0, ignore an option, guess the task wrongly, waste
# a run on an output path, report what did not happen (signals: check_signals.sh).
set -u
tool=$1 name=trust
. "$(dirname "$0")/train_setup.sh"
data="csv:$t/train.csv,$t/test.csv"
train() { "$tool" train "$t/m.flux" --data "$data" --batch 32 --seed 3 "$@"; }
field() { tr ',' '\n' | sed -n "$1p"; }   # field N of a CSV line

# ---- 1. a resumed run goes on with the schedule, by the share of the run done ----
train --epochs 2 --save "$t/r.ckpt" --quiet > /dev/null
train --epochs 4 --resume "$t/r.ckpt" --batch 256 --log "$t/lr.csv" > "$t/out" 2> "$t/err"
rc=$?
lr3=$(sed -n 4p "$t/lr.csv" | field 8) lr4=$(sed -n 5p "$t/lr.csv" | field 8)
l3=$(sed -n 4p "$t/lr.csv" | field 2) l4=$(sed -n 5p "$t/lr.csv" | field 2)
[ $rc -eq 0 ] && awk -v a="$lr3" -v b="$lr4" 'BEGIN { exit !(a > 0.0001 && b > 0) }' && [ "$l3" != "$l4" ] && ok ||
  bad "resume: lr $lr3 $lr4, loss $l3 $l4, exit $rc"
grep -q "note: .*r.ckpt: the run now has 4 epochs (the checkpoint's had 2)" "$t/err" &&
  grep -q "note: .*r.ckpt: the batch size changes from 32 to 256" "$t/err" && ok || bad "resume notes: $(cat "$t/err")"
# the log of a resumed run holds the whole run
[ "$(wc -l < "$t/lr.csv")" -eq 5 ] && [ "$(sed -n 2p "$t/lr.csv" | cut -d, -f1)" = 1 ] && ok || bad "resumed log: $(cat "$t/lr.csv")"
# a run that has nothing left to do says so, saves nothing and says it saved nothing;
# --json's object says so too, with the checkpoint's figures
cp "$t/r.ckpt" "$t/r0.ckpt"
train --epochs 2 --resume "$t/r.ckpt" --save "$t/r.ckpt" --json > "$t/out" 2> "$t/err"; rc=$?
[ $rc -eq 0 ] && ! grep -q saved "$t/out" && grep -q "has done 2 epochs of the 2 asked for: nothing to train" "$t/err" &&
  cmp -s "$t/r.ckpt" "$t/r0.ckpt" && ok || bad "nothing to train: exit $rc: $(cat "$t/out" "$t/err")"
grep -q '^{"epochs": 2, "train_loss": [0-9.e+-]*, .*"seconds": 0, "nothing_to_train": true, "params": [0-9]*}$' "$t/out" &&
  ok || bad "nothing to train, --json: $(cat "$t/out")"
train --epochs 4 --resume "$t/r.ckpt" --save "$t/r4.ckpt" --plot "$t/r.svg" > "$t/out" 2>&1
grep -q '^saved .*r4.ckpt (epoch 4)$' "$t/out" && [ "$(grep -c '<circle' "$t/r.svg")" -eq 16 ] && ok ||
  bad "resumed plot: $(grep -c '<circle' "$t/r.svg") points (4 epochs of 4 curves)"

# ---- 2. each command takes its own options; --init starts from weights ----
train --epochs 8 --lr 0.01 --save "$t/a.ckpt" --quiet > /dev/null
loss_of() { sed -n 's/.*"train_loss": \([0-9.e+-]*\),.*/\1/p' "$1"; }
train --epochs 1 --json --quiet > "$t/fresh.json"
train --epochs 1 --json --init "$t/a.ckpt" > "$t/init.json" 2> "$t/init.err"
train --epochs 1 --json --quiet --params "$t/a.ckpt" > "$t/params.json"
awk -v f="$(loss_of "$t/fresh.json")" -v i="$(loss_of "$t/init.json")" 'BEGIN { exit !(i < 0.7 * f) }' &&
  grep -q "starting from the weights in .*a.ckpt" "$t/init.err" &&
  [ "$(loss_of "$t/init.json")" = "$(loss_of "$t/params.json")" ] && ok ||
  bad "--init: fresh $(loss_of "$t/fresh.json"), init $(loss_of "$t/init.json"), params $(loss_of "$t/params.json")"
usage() {  # usage PATTERN ARGS...: exit 2 and one line
  pat=$1; shift
  "$tool" "$@" > /dev/null 2> "$t/err"; rc=$?
  [ $rc -eq 2 ] && [ "$(wc -l < "$t/err")" -eq 1 ] && grep -q -- "$pat" "$t/err" && ok || bad "$* -> exit $rc: $(cat "$t/err")"
}
usage "cflux eval: --epochs is an option of 'cflux train', not of eval" eval "$t/m.flux" --params "$t/a.ckpt" --epochs 3
usage "cflux eval: --save is an option of 'cflux train'" eval "$t/m.flux" --params "$t/a.ckpt" --save x
usage "cflux predict: --data is an option of 'cflux train'" predict "$t/m.flux" --params "$t/a.ckpt" --data x in.csv
usage "cflux train: unknown option '--epoch' (did you mean --epochs?)" train "$t/m.flux" --epoch 3
usage "cflux train: unknown option '--lr-rate' (did you mean --lr?)" train "$t/m.flux" --lr-rate 3
usage "cflux train: --init starts a new run from weights and --resume continues a run: give one" \
  train "$t/m.flux" --init "$t/a.ckpt" --resume "$t/a.ckpt"
usage "cflux train: --loss is xent or mse, not 'hinge'" train "$t/m.flux" --loss hinge
usage "cflux train: --stop-after 5 is past the 4 epochs planned" train "$t/m.flux" --epochs 4 --stop-after 5
"$tool" train --help > "$t/h1"; "$tool" help train > "$t/h2"
cmp -s "$t/h1" "$t/h2" && grep -q -- '--init FILE' "$t/h1" && grep -q -- '--normalize' "$t/h1" && ok || bad "train help"
"$tool" eval --help > "$t/h3"
grep -q -- '--params CKPT' "$t/h3" && ! grep -q -- '--epochs' "$t/h3" && ok || bad "eval help: $(cat "$t/h3")"

# ---- 3. whole-number targets on a model without softmax are regression ----
awk 'BEGIN { srand(3); print "rooms,area,price";
  for (i = 0; i < 200; i++) { r = int(1 + rand() * 5); a = 30 + rand() * 150;
    printf "%d,%.1f,%d\n", r, a, 50000 + 20000 * r + 1500 * a } }' > "$t/house.csv"
echo 'model = Chain(Input(2), Affine(8), relu, Affine(1))' > "$t/house.flux"
"$tool" train "$t/house.flux" --data "csv:$t/house.csv" --label-col -1 --normalize --epochs 2 > "$t/out" 2> "$t/err"; rc=$?
[ $rc -eq 0 ] && grep -q "^task: regression (mean squared error); targets: column 2 'price' of 3, features: the other 2$" "$t/out" &&
  ok || bad "regression: exit $rc: $(cat "$t/out" "$t/err")"
"$tool" train "$t/house.flux" --data "csv:$t/house.csv" --label-col -1 --loss xent > /dev/null 2> "$t/err"; rc=$?
[ $rc -eq 1 ] && grep -q "classifier models must end with softmax, but this one ends with Affine at .*house.flux:1:42" "$t/err" &&
  ok || bad "regression as xent: exit $rc: $(cat "$t/err")"

# ---- 4. a label column that is not one ----
awk 'BEGIN { srand(5); print "p0,p1,p2,label"; for (i = 0; i < 100; i++) printf "0,%.3f,%.3f,%d\n", rand(), rand(), i % 3 }' > "$t/last.csv"
echo 'model = Chain(Input(3), Affine(3), softmax)' > "$t/last.flux"
"$tool" train "$t/last.flux" --data "csv:$t/last.csv" > /dev/null 2> "$t/err"; rc=$?
[ $rc -eq 1 ] && grep -q "every label is 0: there is nothing to learn (the labels are column 0 'p0' of the file; --label-col chooses another, -1 the last)" "$t/err" &&
  ok || bad "label column: exit $rc: $(cat "$t/err")"
"$tool" train "$t/last.flux" --data "csv:$t/last.csv" --label-col -1 --epochs 1 --quiet > /dev/null 2> "$t/err" && ok ||
  bad "--label-col -1: $(cat "$t/err")"

# ---- 5. divergence stops the run; non-finite weights are refused ----
train --epochs 3 --optim adam --lr 1000000 > "$t/out" 2> "$t/err"; rc=$?
[ $rc -eq 1 ] && grep -q "training diverged.*try a smaller learning rate" "$t/err" && ! grep -q '^epoch' "$t/out" && ok ||
  bad "divergence: exit $rc: $(cat "$t/err")"
# on a tiny data set (one step an epoch) a rate that diverges from the first step is
# stopped early: the reference no longer follows the first 16 steps' rise (it did to
# epoch 21, losses of 4.6e16)
awk 'BEGIN { srand(3); print "rooms,area,price"; for (i = 0; i < 10; i++) { r = int(1 + rand() * 5);
  a = int(30 + rand() * 150); printf "%d,%d,%d\n", r, a, 50000 + 20000 * r + 1500 * a } }' > "$t/house10.csv"
echo 'model = Chain(Input(2), Affine(1))' > "$t/one.flux"
"$tool" train "$t/one.flux" --data "csv:$t/house10.csv" --label-col price --batch 10 --epochs 40 --lr 1.5 --optim sgd \
  --schedule const --normalize > "$t/out" 2> "$t/err"; rc=$?
at=$(sed -n 's/^error: epoch \([0-9]*\), step 1: the loss grew to .*training diverged.*/\1/p' "$t/err")
[ $rc -eq 1 ] && [ -n "$at" ] && [ "$at" -le 10 ] && ok || bad "divergence on a tiny data set: exit $rc: $(cat "$t/err")"

# ---- 8. every output path is checked before the first step ----
for opt in --save --log --plot; do
  train --epochs 50 $opt "$t/nowhere/x.out" > "$t/out" 2> "$t/err"; rc=$?
  [ $rc -eq 1 ] && [ "$(wc -l < "$t/err")" -eq 1 ] && grep -q "nowhere/x.out: cannot write: the directory .*nowhere does not exist" "$t/err" &&
    ! grep -q '^epoch' "$t/out" && ok || bad "$opt to a missing directory: exit $rc: $(cat "$t/out" "$t/err")"
done

# ---- options that no test used: each must change the run ----
train --epochs 3 --save "$t/base.ckpt" --quiet > /dev/null
differs() {  # differs WHAT ARGS...: the run with ARGS ends elsewhere than the base run
  what=$1; shift
  train --epochs 3 --save "$t/opt.ckpt" --quiet "$@" > /dev/null 2>&1
  cmp -s "$t/base.ckpt" "$t/opt.ckpt" && bad "$what changed nothing" || ok
}
differs --clip --clip 0.01
differs --wd --wd 0.5
differs --momentum --optim momentum --momentum 0.9
train --epochs 3 --save "$t/mom.ckpt" --quiet --optim momentum --momentum 0.5 > /dev/null
cmp -s "$t/mom.ckpt" "$t/opt.ckpt" && bad "--momentum 0.5 equals 0.9" || ok
differs --schedule --schedule const
differs --val --val 0.2
differs --seed --seed 4
train --epochs 3 --schedule step:1:0.5 --lr 0.008 --log "$t/step.csv" --quiet > /dev/null
[ "$(cut -d, -f8 "$t/step.csv" | tail -n 3 | tr '\n' ' ')" = "0.008 0.004 0.002 " ] && ok || bad "step schedule: $(cat "$t/step.csv")"
train --epochs 2 --val 0.2 --log "$t/val.csv" > "$t/out"
grep -q ": 240 train, 60 validation, 100 test samples" "$t/out" && [ -n "$(sed -n 2p "$t/val.csv" | cut -d, -f4)" ] && ok || bad "--val: $(cat "$t/val.csv")"
train --epochs 1 --threads 1 | grep -q ', 1 thread$' && ok || bad "--threads 1"
# --label-col: the label last, named so, gives the same run as the label first
awk -F, 'BEGIN { OFS = "," } { print $2, $3, $4, $5, $1 }' "$t/train.csv" > "$t/train_last.csv"
awk -F, 'BEGIN { OFS = "," } { print $2, $3, $4, $5, $1 }' "$t/test.csv" > "$t/test_last.csv"
"$tool" train "$t/m.flux" --data "csv:$t/train_last.csv,$t/test_last.csv" --label-col 4 --batch 32 --seed 3 --epochs 3 \
  --save "$t/last.ckpt" --quiet > /dev/null
# the same tensors (the metadata differs: each remembers its own files and label column)
tensors() { h=$(od -An -t u8 -N 8 "$1" | tr -d ' '); tail -c +$((h + 9)) "$1"; }
tensors "$t/base.ckpt" > "$t/base.bin"; tensors "$t/last.ckpt" > "$t/last.bin"
[ -s "$t/base.bin" ] && cmp -s "$t/base.bin" "$t/last.bin" && ok || bad "--label-col 4 differs from the label in column -1"

# ---- eval and predict agree with what training measured ----
train --epochs 5 --json --quiet --save "$t/e.ckpt" > "$t/train.json"
"$tool" eval "$t/m.flux" --params "$t/e.ckpt" --data "$data" --batch 32 --json > "$t/eval.json"
tl=$(sed -n 's/.*"test_loss": \([0-9.e+-]*\),.*/\1/p' "$t/train.json")
ta=$(sed -n 's/.*"test_accuracy": \([0-9.e+-]*\),.*/\1/p' "$t/train.json")
[ -n "$tl" ] && grep -q "\"loss\": $tl, \"accuracy\": $ta[,}]" "$t/eval.json" && ok || bad "eval $(cat "$t/eval.json") vs train $tl $ta"
tail -n +2 "$t/test.csv" | cut -d, -f2- > "$t/in.csv"
"$tool" predict "$t/m.flux" --params "$t/e.ckpt" "$t/in.csv" > "$t/pred"
# the predicted classes score the accuracy that eval and training measured
hits=$(tail -n +2 "$t/test.csv" | cut -d, -f1 | paste -d' ' - "$t/pred" | awk '$1 == $4 { n++ } END { print n + 0 }')
awk -v h="$hits" -v a="$ta" 'BEGIN { exit !(h / 100 == a + 0) }' && ok || bad "predict: $hits of 100 right, accuracy $ta"
# from a pipe, read once: the same predictions
cat "$t/in.csv" | "$tool" predict "$t/m.flux" --params "$t/e.ckpt" /dev/stdin > "$t/pred_pipe"
cmp -s "$t/pred" "$t/pred_pipe" && ok || bad "predict from a pipe: $(head -n 3 "$t/pred_pipe")"
# row order: each row alone gives the line of that row
for row in 1 38 100; do
  sed -n "${row}p" "$t/in.csv" > "$t/one.csv"
  one=$("$tool" predict "$t/m.flux" --params "$t/e.ckpt" "$t/one.csv" | sed 's/^0: //')
  [ "$(sed -n "${row}p" "$t/pred" | sed 's/^[0-9]*: //')" = "$one" ] && ok || bad "predict row $row: $one"
done

# ---- the default memory limit is what the process can have: here its ulimit -v ----
# (not under AddressSanitizer, whose shadow memory alone needs terabytes of address
# space: the release build runs it; test_mem checks the same rule with fake files)
if [ "${CFLUX_SANITIZED:-0}" != 1 ]; then
  echo 'model = Chain(Input(4), Affine(100000000), softmax)' > "$t/wide.flux"
  (ulimit -v 2097152 && "$tool" train "$t/wide.flux" --data "$data" > "$t/out" 2>&1); rc=$?
  [ $rc -eq 1 ] && grep -q "^error: training needs .*, above the memory limit of 2.0 GB, with" "$t/out" && ok ||
    bad "ulimit -v 2G: exit $rc: $(cat "$t/out")"
fi

echo "train trust: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
