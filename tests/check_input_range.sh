#!/bin/sh
# check_input_range.sh CFLUX - a checkpoint keeps the range of its training inputs, and
# predict (and eval of other data) says on stderr when its inputs lie far outside it:
# raw 0..255 pixels for a model trained on [0, 1] get "divide by 255"; inputs in range,
# a file laid out as the training file (its label column left out), and a checkpoint
# without the range (an earlier cflux's) get no note.
set -u
tool=$1 name=input-range
. "$(dirname "$0")/train_setup.sh"

"$tool" train "$t/m.flux" --data "csv:$t/train.csv" --epochs 2 --seed 3 --save "$t/m.ckpt" --quiet > /dev/null 2>&1 ||
  bad "train failed"

# the features alone, in range; the training file's layout (label column 0..2 included)
cut -d, -f2-5 "$t/test.csv" > "$t/x.csv"
# raw pixels: whole numbers 0..255
awk 'BEGIN { srand(5); for (i = 0; i < 20; i++) printf "%d,%d,%d,%d\n", int(256 * rand()), int(256 * rand()), 255,
  int(256 * rand()) }' > "$t/px.csv"
# features in the thousands
awk 'BEGIN { srand(6); for (i = 0; i < 20; i++) printf "%.1f,%.1f,%.1f,%.1f\n", 4000 * rand(), 4000 * rand(),
  4000 * rand(), 4000 * rand() }' > "$t/big.csv"
# a little outside [0, 1], less than one span: extrapolation, not another scale
printf '%s\n' '-0.5,0.2,1.8,0.4' '0.1,1.2,0.3,-0.2' > "$t/near.csv"

# pred NAME FILE [CKPT]: predict, exit 0 and one line a sample, stderr kept in $t/NAME.err
pred() {
  "$tool" predict "${3:-$t/m.ckpt}" "$2" > "$t/$1.out" 2> "$t/$1.err"
  rc=$?
  [ $rc -eq 0 ] && [ -s "$t/$1.out" ] && ok || bad "predict $1: exit $rc: $(cat "$t/$1.err")"
}

pred px "$t/px.csv"
grep -q "^note: .*px.csv: the inputs range over \[[0-9]*, 255\], but .*m.ckpt was trained on \[0\.0.*, 0\.99.*\]: .*divide them by 255" \
  "$t/px.err" && [ "$(wc -l < "$t/px.err")" -le 2 ] && ok || bad "0..255 inputs: no note to divide by 255: $(cat "$t/px.err")"

pred big "$t/big.csv"
grep -q "^note: .*big.csv: the inputs range over \[[0-9.]*, [0-9.]*\], far outside .*m.ckpt was trained on" "$t/big.err" &&
  ! grep -q 255 "$t/big.err" && ok || bad "inputs in the thousands: no note, or a wrong one: $(cat "$t/big.err")"

for f in x test near; do
  pred $f "$t/$f.csv"
  [ ! -s "$t/$f.err" ] && ok || bad "$f.csv, in range: something said: $(cat "$t/$f.err")"
done

# eval of other data: the same note
awk -F, 'NR == 1 { print; next } { printf "%d,%d,%d,%d,%d\n", $1, 255 * $2, 255 * $3, 255 * $4, 255 * $5 }' \
  "$t/test.csv" > "$t/test255.csv"
"$tool" eval "$t/m.ckpt" --data "csv:$t/test255.csv" > "$t/eval.out" 2> "$t/eval.err"; rc=$?
[ $rc -eq 0 ] && grep -q "^note: .*test255.csv: the inputs range over \[[0-9]*, 25[0-9]\].*divide them by 255" "$t/eval.err" &&
  ok || bad "eval --data of 0..255: exit $rc: $(cat "$t/eval.err")"
"$tool" eval "$t/m.ckpt" > "$t/eval.out" 2> "$t/eval.err"; rc=$?
[ $rc -eq 0 ] && [ ! -s "$t/eval.err" ] && ok || bad "eval of its own data: exit $rc: $(cat "$t/eval.err")"

# a checkpoint of an earlier cflux: no range kept (the note's key renamed, same length)
grep -aq '"info.input_range"' "$t/m.ckpt" && ok || bad "m.ckpt keeps no info.input_range"
LC_ALL=C sed 's/"info\.input_range"/"info.input_rangx"/' "$t/m.ckpt" > "$t/old.ckpt"
pred old "$t/px.csv" "$t/old.ckpt"
[ ! -s "$t/old.err" ] && cmp -s "$t/old.out" "$t/px.out" && ok ||
  bad "a checkpoint without the range: $(cat "$t/old.err")"

echo "input range: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
