#!/bin/sh
# check_json.sh CFLUX - --json writes its JSON alone on stdout, every line for people
# (header, summary, epochs, notes, "saved", "report:") on stderr: train, eval, predict,
# lr-find, bench, summary and version. --quiet drops the header and the epoch lines
# and keeps the result line: classification, regression and text data.
set -u
tool=$1 name=json
. "$(dirname "$0")/train_setup.sh"
# is_json FILE: the file is one JSON value (python3's parser when there is one)
is_json() {
  if command -v python3 > /dev/null 2>&1; then python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$1" 2> /dev/null
  else c=$(head -c 1 "$1"); { [ "$c" = "{" ] || [ "$c" = "[" ]; } && [ "$(wc -l < "$1")" -eq 1 ]; fi
}
# json WHAT COMMAND...: exit 0, and stdout one JSON value
json() {
  what=$1; shift
  "$@" > "$t/out" 2> "$t/err"; rc=$?
  if [ $rc -eq 0 ] && is_json "$t/out"; then ok
  else bad "$what --json: exit $rc, stdout: $(head -c 400 "$t/out") stderr: $(head -c 400 "$t/err")"; fi
}
data="csv:$t/train.csv,$t/test.csv"

json train "$tool" train "$t/m.flux" --data "$data" --epochs 2 --save "$t/a.ckpt" --report "$t/r.html" --json
for line in '^training ' '^task: ' '^epoch  2/2 ' '^test accuracy 0\.' '^saved ' '^report: '; do
  grep -q "$line" "$t/err" && ok || bad "train --json: no line '$line' on stderr: $(cat "$t/err")"
done
{ echo '# train: --epochs 1'; cat "$t/m.flux"; } > "$t/s.flux"
json "train (a model's settings line)" "$tool" train "$t/s.flux" --data "$data" --json
grep -q '^settings from' "$t/err" && ok || bad "train --json: the settings line is not on stderr"
json "train --resume with nothing to train" "$tool" train "$t/m.flux" --data "$data" --epochs 2 --resume "$t/a.ckpt" --json
json eval "$tool" eval "$t/m.flux" --params "$t/a.ckpt" --data "$data" --json
cut -d, -f2- "$t/test.csv" > "$t/inputs.csv"
json predict "$tool" predict "$t/m.flux" --params "$t/a.ckpt" "$t/inputs.csv" --json
json lr-find "$tool" lr-find "$t/m.flux" --data "$data" --steps 20 --json
json bench "$tool" bench "$t/m.flux" --seconds 0.1 --json
json summary "$tool" summary "$t/m.flux" --json
json version "$tool" version --json
for i in $(seq 40); do echo 'the quick brown fox jumps over the lazy dog'; done > "$t/words.txt"
echo 'model = Chain(Input(8), x -> reshape(x, 8, 1), Affine(30), softmax)' > "$t/char.flux"
json "train on text" "$tool" train "$t/char.flux" --data "text:$t/words.txt" --epochs 1 --batch 16 --json

# --quiet: the result line alone on stdout
quiet() {  # quiet PATTERN COMMAND...
  pat=$1; shift
  "$@" --quiet > "$t/out" 2> "$t/err"; rc=$?
  if [ $rc -eq 0 ] && [ "$(wc -l < "$t/out")" -eq 1 ] && grep -qx -- "$pat" "$t/out"; then ok
  else bad "$* --quiet: exit $rc, stdout: $(cat "$t/out")"; fi
}
quiet 'test accuracy 0\.[0-9]*' "$tool" train "$t/m.flux" --data "$data" --epochs 2
echo 'model = Chain(Input(4), Affine(8), tanh, Affine(1))' > "$t/reg.flux"
quiet 'test loss [0-9.]* (mean squared error)' "$tool" train "$t/reg.flux" --data "$data" --epochs 2
quiet 'test loss [0-9.]* nats/char, accuracy 0\.[0-9]*' "$tool" train "$t/char.flux" --data "text:$t/words.txt" --epochs 1 --batch 16
quiet 'validation accuracy 0\.[0-9]*' "$tool" train "$t/m.flux" --data "csv:$t/train.csv" --epochs 2 --val 0.2
quiet 'train accuracy 0\.[0-9]*' "$tool" train "$t/m.flux" --data "csv:$t/train.csv" --epochs 2
"$tool" train "$t/m.flux" --data "$data" --epochs 2 --quiet --json > "$t/out" 2> "$t/err"
is_json "$t/out" && [ "$(cat "$t/err")" = "$(grep '^test accuracy 0\.' "$t/err")" ] && [ -s "$t/err" ] && ok ||
  bad "--quiet --json: stdout $(cat "$t/out"), stderr $(cat "$t/err")"
# the help says what each does
"$tool" help train > "$t/help"
grep -q -- '--quiet .*no header, model summary or epoch lines' "$t/help" && ok || bad "train --help on --quiet: $(grep -A1 -- --quiet "$t/help")"
grep -q -- '--json .*one JSON object of the results on stdout' "$t/help" && ok || bad "train --help on --json: $(grep -A1 -- --json "$t/help")"

echo "json: $pass passed, $fail failed"
[ $fail -eq 0 ]
