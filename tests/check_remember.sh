#!/bin/sh
# check_remember.sh CFLUX - a checkpoint remembers how its data was read: eval and
# predict of a CSV regression checkpoint take its label column, features and target
# statistics with no options; an option that contradicts it is refused; the checkpoint
# alone stands for the model; regression on large targets that does not move says why.
set -u
tool=$1 name=remember
. "$(dirname "$0")/train_setup.sh"

# houses: price = 1000 area + 15000 rooms - 400 age + noise; the price last, no header
awk 'BEGIN { srand(11); for (i = 0; i < 500; i++) { a = 50 + 200 * rand(); r = 1 + int(6 * rand()); g = 80 * rand();
  printf "%.1f,%d,%.1f,%.0f\n", a, r, g, 1000 * a + 15000 * r - 400 * g + 5000 * (rand() - 0.5) } }' > "$t/all.csv"
head -n 400 "$t/all.csv" > "$t/h.csv"
tail -n 100 "$t/all.csv" > "$t/ht.csv"
cut -d, -f1-3 "$t/ht.csv" > "$t/hx.csv"   # features alone, for predict
echo 'model = Chain(Input(3), Affine(16), relu, Affine(1))' > "$t/h.flux"
echo 'model = Chain(Input(2), Affine(8), tanh, Affine(3), softmax)' > "$t/m4.flux"
"$tool" train "$t/h.flux" --data "csv:$t/h.csv,$t/ht.csv" --label-col -1 --normalize --epochs 80 --lr 0.01 \
  --save "$t/h.ckpt" > "$t/train.out" 2> "$t/train.err"
rc=$?
[ $rc -eq 0 ] && ok || bad "train: exit $rc: $(cat "$t/train.err")"
grep -q "losses below are on standardised targets" "$t/train.out" && ok || bad "the header does not say the targets are standardised"

# ---- eval with no options: the checkpoint's data, label column and target statistics ----
r2() { sed -n 's/.*R² \(-*[0-9.]*\).*/\1/p' "$1"; }
"$tool" eval "$t/h.ckpt" > "$t/eval.out" 2>&1; rc=$?
[ $rc -eq 0 ] && grep -q "data: csv:.*h.csv,.*ht.csv, label column 3 (as the checkpoint remembers)" "$t/eval.out" &&
  awk -v r="$(r2 "$t/eval.out")" 'BEGIN { exit !(r > 0.95) }' && ok || bad "eval CKPT: exit $rc: $(cat "$t/eval.out")"
# the metrics are in the targets' own units: MAE of thousands, not of standardised units
mae=$(sed -n 's/.*MAE \([0-9.e+]*\),.*/\1/p' "$t/eval.out")
awk -v m="$mae" 'BEGIN { exit !(m > 300 && m < 20000) }' && ok || bad "MAE $mae is not in the targets' units"
# the model file with --params and other data: the label column still the checkpoint's
"$tool" eval "$t/h.flux" --params "$t/h.ckpt" --data "csv:$t/ht.csv" > "$t/eval2.out" 2>&1; rc=$?
[ $rc -eq 0 ] && [ "$(r2 "$t/eval2.out")" = "$(r2 "$t/eval.out")" ] && ok || bad "eval --data: exit $rc: $(cat "$t/eval2.out")"
"$tool" eval "$t/h.ckpt" --label-col 3 > "$t/eval3.out" 2>&1; rc=$?
[ $rc -eq 0 ] && [ "$(r2 "$t/eval3.out")" = "$(r2 "$t/eval.out")" ] && ok || bad "eval --label-col 3 (agrees): exit $rc"

# ---- a contradicting option is refused, naming both ----
"$tool" eval "$t/h.ckpt" --label-col 0 > "$t/out" 2> "$t/err"; rc=$?
[ $rc -eq 1 ] && grep -q "error: --label-col 0 (column 0 of .*h.csv) contradicts .*h.ckpt, which was trained with the label in column 3" "$t/err" &&
  ok || bad "contradicting --label-col: exit $rc: $(cat "$t/err")"
"$tool" eval "$t/h.ckpt" --features 0,1 > "$t/out" 2> "$t/err"; rc=$?
[ $rc -eq 1 ] && grep -q "error: --features 0,1 contradicts .*h.ckpt" "$t/err" && ok || bad "contradicting --features: exit $rc: $(cat "$t/err")"

# --features by name or number: the same columns agree, others are refused
"$tool" train "$t/m4.flux" --data "csv:$t/train.csv" --features b,c --epochs 1 --save "$t/f.ckpt" --quiet > /dev/null 2>&1
"$tool" eval "$t/f.ckpt" --features 2,3 > /dev/null 2> "$t/err"; rc=$?
"$tool" eval "$t/f.ckpt" --features 3,2 > /dev/null 2>> "$t/err"; rc2=$?
[ $rc -eq 0 ] && [ $rc2 -eq 1 ] && grep -q "error: --features 3,2 contradicts .*f.ckpt, which was trained on the features b,c" "$t/err" &&
  ok || bad "--features by number: exits $rc $rc2: $(cat "$t/err")"

# ---- predict: the checkpoint alone; features alone or the training file's layout ----
"$tool" predict "$t/h.ckpt" "$t/hx.csv" > "$t/p1" 2> "$t/err"; rc=$?
"$tool" predict "$t/h.ckpt" "$t/ht.csv" > "$t/p2" 2>> "$t/err"; rc2=$?
"$tool" predict "$t/h.flux" --params "$t/h.ckpt" "$t/hx.csv" > "$t/p3" 2>> "$t/err"; rc3=$?
[ $rc -eq 0 ] && [ $rc2 -eq 0 ] && [ $rc3 -eq 0 ] && [ "$(wc -l < "$t/p1")" -eq 100 ] && cmp -s "$t/p1" "$t/p2" &&
  cmp -s "$t/p1" "$t/p3" && ok || bad "predict CKPT: exits $rc $rc2 $rc3: $(cat "$t/err")"
# predictions in the targets' units, near the prices (within 10% on average)
paste -d' ' "$t/p1" "$t/ht.csv" | tr ',' ' ' | awk '{ e += ($2 - $6 < 0 ? $6 - $2 : $2 - $6) / $6 } END { exit !(NR == 100 && e / NR < 0.1) }' &&
  ok || bad "predictions are not prices: $(head -n 3 "$t/p1")"
"$tool" predict "$t/h.ckpt" "$t/hx.csv" --params "$t/h.ckpt" > /dev/null 2> "$t/err"; rc=$?
[ $rc -eq 2 ] && grep -q "is a checkpoint (or parameter file) and holds the model: give it once" "$t/err" && ok ||
  bad "CKPT and --params: exit $rc: $(cat "$t/err")"
"$tool" predict "$t/h.flux" "$t/hx.csv" > /dev/null 2> "$t/err"; rc=$?
[ $rc -eq 2 ] && grep -q "needs --params CHECKPOINT" "$t/err" && ok || bad "no weights: exit $rc: $(cat "$t/err")"

# word labels: predict on the training file's layout leaves the label column of words out
awk -F, 'NR == 1 { print "a,b,c,d,kind"; next } { split("low mid high", k, " "); print $2 "," $3 "," $4 "," $5 "," k[$1 + 1] }' \
  "$t/train.csv" > "$t/words.csv"
cut -d, -f1-4 "$t/words.csv" > "$t/wordsx.csv"
"$tool" train "$t/m.flux" --data "csv:$t/words.csv" --label-col kind --epochs 2 --save "$t/w.ckpt" --quiet > /dev/null 2>&1
"$tool" predict "$t/w.ckpt" "$t/words.csv" > "$t/pw1" 2> "$t/err"; rc=$?
"$tool" predict "$t/w.ckpt" "$t/wordsx.csv" > "$t/pw2" 2>> "$t/err"; rc2=$?
[ $rc -eq 0 ] && [ $rc2 -eq 0 ] && [ "$(wc -l < "$t/pw1")" -eq 300 ] && cmp -s "$t/pw1" "$t/pw2" &&
  grep -q "^0: class [0-2] \(high\|low\|mid\) (p = " "$t/pw1" && ok || bad "predict, word labels: exits $rc $rc2: $(cat "$t/err") $(head -n 2 "$t/pw1")"

# ---- an option for one kind of data, given with another, is refused ----
usage() {  # usage PATTERN ARGS...: exit 2 and the one line
  pat=$1; shift
  "$tool" "$@" > /dev/null 2> "$t/err"; rc=$?
  [ $rc -eq 2 ] && [ "$(wc -l < "$t/err")" -eq 1 ] && grep -q -- "$pat" "$t/err" && ok || bad "$* -> exit $rc: $(cat "$t/err")"
}
usage "cflux train: --label-col is for CSV data (csv:FILE), and --data fashion-mnist is not" train "$t/m.flux" --label-col 3
usage "cflux train: --features is for CSV data" train "$t/m.flux" --data "text:$t/h.csv" --features 1,2
usage "cflux lr-find: --skip-bad is for image folders (images:DIR), and --data csv:" lr-find "$t/m.flux" --data "csv:$t/train.csv" --skip-bad
usage "cflux train: --exact-size is for image folders" train "$t/m.flux" --data "csv:$t/train.csv" --exact-size
usage "cflux eval: --label-col is for CSV data (csv:FILE), and --data idx:" eval "$t/h.ckpt" --data idx:a,b --label-col 1

# ---- large targets that do not move: a note that says why and what to try ----
"$tool" train "$t/h.flux" --data "csv:$t/h.csv" --label-col -1 --epochs 8 --quiet > /dev/null 2> "$t/err"
grep -q "note: after 50 steps the loss (.*) is still that of outputs of 0 .*standardise the targets (--normalize" "$t/err" &&
  ok || bad "no note for unscaled targets: $(cat "$t/err")"
"$tool" train "$t/h.flux" --data "csv:$t/h.csv" --label-col -1 --epochs 8 --quiet --normalize > /dev/null 2> "$t/err"
grep -q "still that of outputs of 0" "$t/err" && bad "the note with --normalize" || ok

echo "remember: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
