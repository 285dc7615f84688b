#!/bin/sh
# check_finetune.sh CFLUX - fine-tuning from the command line: --freeze's globs (as
# summary counts them), the summary's marks, a frozen run resumed without --freeze
# ending where the whole run ends, --init --partial's notes, --only-classes through
# train and eval, and the errors.
set -u
tool=$1 name=finetune
. "$(dirname "$0")/train_setup.sh"
train() { "$tool" train "$t/m.flux" --data "csv:$t/train.csv,$t/test.csv" --batch 32 --seed 3 "$@"; }
# m.flux's parameters: 1.W (4, 16), 1.b (1, 16), 3.W (16, 3), 3.b (1, 3)
frozen() {  # frozen PATTERN...: the count of frozen weights the summary gives
  args=""
  for p in "$@"; do args="$args --freeze $p"; done
  # shellcheck disable=SC2086
  "$tool" summary "$t/m.flux" --json $args | sed 's/.*"frozen":\([0-9]*\).*/\1/'
}

# globs: '*' and '?' over whole names, dots too; classes; several --freeze add up
[ "$(frozen '1.*')" = 80 ] && ok || bad "1.* froze $(frozen '1.*')"
[ "$(frozen '?.b')" = 19 ] && ok || bad "?.b froze $(frozen '?.b')"
[ "$(frozen '[3].W' 1.b)" = 64 ] && ok || bad "[3].W 1.b froze $(frozen '[3].W' 1.b)"
[ "$(frozen '*W')" = 112 ] && ok || bad "*W froze $(frozen '*W')"
[ "$(frozen 3.W '*.W')" = 112 ] && ok || bad "3.W *.W froze $(frozen 3.W '*.W')"
# the table: the row marked, the totals split, no weight gradients backward
"$tool" summary "$t/m.flux" --freeze '1.*' > "$t/sum"
grep -q '^Affine .* 80 (frozen) ' "$t/sum" && ok || bad "summary row: $(cat "$t/sum")"
grep -q '^Parameters: 51 trained, 80 frozen' "$t/sum" && ok || bad "summary totals: $(cat "$t/sum")"

# a frozen run stopped and resumed without --freeze keeps the checkpoint's, and ends
# where the whole run ends, bit for bit; the frozen layer is the one that did not move
train --epochs 4 --freeze '1.*' --quiet --save "$t/full.ckpt" > /dev/null || bad "frozen run"
train --epochs 4 --freeze '1.*' --quiet --stop-after 2 --save "$t/half.ckpt" > /dev/null || bad "half run"
train --epochs 4 --quiet --resume "$t/half.ckpt" --save "$t/res.ckpt" > /dev/null 2> "$t/err" || bad "resume: $(cat "$t/err")"
cmp -s "$t/full.ckpt" "$t/res.ckpt" && ok || bad "a frozen run resumed without --freeze differs from the whole run"
train --epochs 4 --freeze '3.*' --quiet --resume "$t/half.ckpt" > /dev/null 2> "$t/err"
[ $? -eq 1 ] && grep -q "half.ckpt: the checkpoint's run kept 2 parameters frozen and this one 2, others" "$t/err" && ok ||
  bad "another --freeze on resume: $(cat "$t/err")"

# --init --partial: a model with a new layer loads what fits and says so
echo 'model = Chain(Input(4), Affine(16), tanh, Affine(8), tanh, Affine(3), softmax)' > "$t/deeper.flux"
"$tool" train "$t/deeper.flux" --data "csv:$t/train.csv" --epochs 1 --quiet --init "$t/full.ckpt" --partial \
  --freeze '1.*' > /dev/null 2> "$t/err" && ok || bad "partial: $(cat "$t/err")"
grep -q "^note: .*full.ckpt: loaded 2 of 6 parameters$" "$t/err" && ok || bad "partial, count: $(cat "$t/err")"
grep -q "^note: .*full.ckpt: not loaded (4, left as initialised): 3.W ((16, 8) in the model, (16, 3) in the file), 3.b ((1, 8) in the model, (1, 3) in the file), 5.W (not in the file), 5.b (not in the file)$" "$t/err" &&
  ok || bad "partial, not loaded: $(cat "$t/err")"
"$tool" train "$t/deeper.flux" --data "csv:$t/train.csv" --epochs 1 --quiet --init "$t/full.ckpt" > /dev/null 2> "$t/err"
[ $? -eq 1 ] && [ "$(wc -l < "$t/err")" -eq 1 ] && grep -q "(--partial loads the parameters whose names and shapes match)" "$t/err" &&
  ok || bad "no --partial: $(cat "$t/err")"

# --only-classes: two of the three classes, relabelled; eval remembers them
echo 'model = Chain(Input(4), Affine(16), tanh, Affine(2), softmax)' > "$t/two.flux"
"$tool" train "$t/two.flux" --data "csv:$t/train.csv,$t/test.csv" --only-classes 2,0 --epochs 2 --save "$t/two.ckpt" \
  > "$t/out" 2>&1 && ok || bad "only-classes: $(cat "$t/out")"
n=$(awk -F, 'NR > 1 && $1 != 1' "$t/train.csv" | wc -l)
grep -q ": $n train, " "$t/out" && ok || bad "only-classes: not $n samples: $(head -n 1 "$t/out")"
"$tool" eval "$t/two.ckpt" > "$t/out" 2>&1
m=$(awk -F, 'NR > 1 && $1 != 1' "$t/test.csv" | wc -l)
grep -q "only the classes 2,0 (as the checkpoint remembers)" "$t/out" && grep -q "($m samples)" "$t/out" && ok ||
  bad "eval of only-classes: $(cat "$t/out")"

# usage and model errors: one line each
err() {  # err STATUS PATTERN COMMAND...
  want=$1 pat=$2; shift 2
  "$@" > /dev/null 2> "$t/err"; rc=$?
  if [ $rc -eq "$want" ] && [ "$(wc -l < "$t/err")" -eq 1 ] && grep -q -- "$pat" "$t/err"; then ok
  else bad "$* -> exit $rc: $(cat "$t/err")"; fi
}
err 2 "give --init FILE with it" train --partial
err 1 "freeze 'x.\*' matches no parameter" train --freeze 'x.*'
err 1 "did you mean '\*W'? it matches 2" train --freeze W
err 1 "did you mean '3.b'?" train --freeze 3.B
err 1 "freezes every parameter of the model (4)" train --freeze '*'
err 1 "freezes every parameter" "$tool" summary "$t/m.flux" --freeze '[13].*'
err 1 "keeps 3 classes, but the model's output gives 2" "$tool" train "$t/two.flux" --data "csv:$t/train.csv" --only-classes 0-2

echo "finetune tool: $pass passed, $fail failed"
[ $fail -eq 0 ]
