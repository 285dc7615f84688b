#!/bin/sh
# check_csv_classes.sh CFLUX [PYTHON] - a CSV file as people have it, iris-like: an id
# column of words, four features, the species as words, last. The same class names
# go through train (--label-col NAME, --features, --save, --report), eval on a test
# file of two of the classes in another order (the checkpoint's indices, so the
# accuracy stays high), predict, and both exports (ONNX metadata_props and the
# safetensors metadata, read with Python's standard library; with PYTHON, a Python
# that has onnx, also through onnx.load). --classes in another order is honoured;
# contradicting the data, or a word the checkpoint does not know, is one error line.
set -u
tool=$1 py=${2:-}
case $tool in /*) ;; *) tool=$(pwd)/$tool ;; esac
pass=0 fail=0
t=$(mktemp -d /tmp/cflux-csv-classes-XXXXXX)
trap 'rm -rf "$t"' EXIT
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAILED: $*"; }
cd "$t" || exit 1

# 150 rows; class c (sorted index) from a formula, the rows first naming virginica,
# then setosa, then versicolor (so the order of first appearance is not the sorted one)
awk 'BEGIN { print "id,sepal_length,sepal_width,petal_length,petal_width,species"
  split("virginica setosa versicolor", name, " "); split("2 0 1", cls, " ")
  for (i = 0; i < 150; i++) { k = i % 3 + 1; c = cls[k]
    printf "s%03d,%.3f,%.3f,%.3f,%.3f,%s\n", i, 5 + 0.8 * c + 0.3 * sin(i), 3.4 - 0.4 * c + 0.2 * cos(1.3 * i),
      1.5 + 2 * c + 0.3 * sin(0.7 * i), 0.2 + 0.9 * c + 0.1 * cos(2.1 * i), name[k] } }' > iris.csv
# the test file: virginica rows first, then versicolor; no setosa
{ head -n 1 iris.csv; grep ',virginica$' iris.csv | head -n 10; grep ',versicolor$' iris.csv | head -n 10; } > test.csv
echo 'model = Chain(Input(4), Affine(16), tanh, Affine(3), softmax)' > m.flux
cols="--label-col species --features sepal_length,sepal_width,petal_length,petal_width"

# train (the test file read with the training file's classes): the task line names the
# classes and the column left out
# shellcheck disable=SC2086
"$tool" train m.flux --data csv:iris.csv,test.csv $cols --epochs 40 --lr 0.05 --seed 1 --save m.ckpt --report r.html > out 2> err
rc=$?
[ $rc -eq 0 ] && ok || bad "train exit $rc: $(cat err)"
grep -q "^task: classification into 3 classes (cross-entropy); labels: column 5 'species' of 6, features: 4 chosen (--features), 1 column ignored; the classes: setosa, versicolor, virginica$" out \
  && ok || bad "task line: $(grep '^task' out)"
# the report's per-class table (of the test set, read with the training file's classes)
sed -n '/<h2>Per class<\/h2>/,/<\/table>/p' r.html | grep -o '<td class="l">[^<]*' | sed 's/.*>//' > rep
[ "$(tr '\n' ' ' < rep)" = "0 setosa 1 versicolor 2 virginica macro average " ] && ok || bad "the report's classes: $(cat rep)"

# eval on the test file: the checkpoint's indices (setosa 0, absent), not the file's own
# shellcheck disable=SC2086
"$tool" eval m.flux --params m.ckpt --data csv:test.csv $cols --json > ev 2>&1
grep -q '"classes": \["setosa", "versicolor", "virginica"\], "confusion": \[\[0, 0, 0\], \[0, 10, 0\], \[0, 0, 10\]\]' ev \
  && ok || bad "eval: $(cat ev)"

# predict prints the names
cut -d, -f2-5 test.csv > in.csv
"$tool" predict m.flux --params m.ckpt in.csv > pr 2>&1
[ "$(grep -c '^[0-9]*: class 2 virginica (p = ' pr)" -eq 10 ] && [ "$(grep -c '^[0-9]*: class 1 versicolor (p = ' pr)" -eq 10 ] \
  && ok || bad "predict: $(head -n 3 pr)"

# exports: the same names, as a JSON array
"$tool" export m.flux --params m.ckpt --onnx m.onnx --to-torch m.st > /dev/null 2> err && ok || bad "export: $(cat err)"
want='["setosa", "versicolor", "virginica"]'
got=$(python3 - m.onnx m.st << 'EOF'
import json, struct, sys
def varint(b, i):
    v = s = 0
    while True:
        c = b[i]; i += 1; v |= (c & 0x7F) << s; s += 7
        if c < 0x80: return v, i
def fields(b):  # (field, wire type, value) of one protobuf message
    i = 0
    while i < len(b):
        k, i = varint(b, i)
        if k & 7 == 0: v, i = varint(b, i)
        elif k & 7 == 2: n, i = varint(b, i); v = b[i:i + n]; i += n
        elif k & 7 == 5: v = b[i:i + 4]; i += 4
        else: v = b[i:i + 8]; i += 8
        yield k >> 3, k & 7, v
onnx = open(sys.argv[1], 'rb').read()
meta = {}
for f, w, v in fields(onnx):
    if f == 14:  # ModelProto.metadata_props: StringStringEntryProto key 1, value 2
        e = {g: u.decode() for g, _, u in fields(v)}
        meta[e[1]] = e[2]
st = open(sys.argv[2], 'rb').read()
n = struct.unpack('<Q', st[:8])[0]
head = json.loads(st[8:8 + n])
print(json.dumps(json.loads(meta['class_names'])), json.dumps(json.loads(head['__metadata__']['class_names'])))
EOF
)
[ "$got" = "$want $want" ] && ok || bad "exported names: $got"
if [ -n "$py" ] && [ -x "$py" ] && "$py" -c 'import onnx' 2> /dev/null; then
  got=$("$py" -c 'import onnx, sys; m = onnx.load(sys.argv[1]); onnx.checker.check_model(m)
print({p.key: p.value for p in m.metadata_props}["class_names"])' m.onnx 2>&1)
  [ "$got" = "$want" ] && ok || bad "onnx.load: $got"
else
  echo "note: no Python with onnx ($py): the ONNX metadata read by hand only"
fi

# --classes in another order: the data is read as those indices
printf 'virginica\nversicolor\nsetosa\n' > order.txt
# shellcheck disable=SC2086
"$tool" train m.flux --data csv:iris.csv $cols --epochs 1 --classes order.txt --save o.ckpt > out 2> err &&
  grep -q "the classes: virginica, versicolor, setosa$" out && ok || bad "--classes order: $(cat out err)"
# shellcheck disable=SC2086
"$tool" eval m.flux --params o.ckpt --data csv:test.csv $cols --json > ev 2>&1
grep -q '"classes": \["virginica", "versicolor", "setosa"\]' ev && grep -q '"support": 10}, {[^}]*"support": 10}, {[^}]*"support": 0}' ev \
  && ok || bad "eval with --classes order: $(cat ev)"

# errors: one line, exit 1
one_line() {  # one_line PATTERN COMMAND...
  pat=$1; shift
  "$@" > /dev/null 2> err; rc=$?
  if [ $rc -eq 1 ] && [ "$(wc -l < err)" -eq 1 ] && grep -qF -- "$pat" err; then ok
  else bad "$* -> exit $rc: $(cat err)"; fi
}
printf 'setosa\nversicolor\nrose\n' > wrong.txt
# shellcheck disable=SC2086
one_line "error: iris.csv:2: the label 'virginica' is not one of the 3 classes of wrong.txt (setosa, versicolor, rose)" \
  "$tool" train m.flux --data csv:iris.csv $cols --epochs 1 --classes wrong.txt
sed '5s/,[a-z]*$/,rose/' test.csv > rose.csv
# shellcheck disable=SC2086
one_line "error: rose.csv:5: the label 'rose' is not one of the 3 classes of m.ckpt (setosa, versicolor, virginica)" \
  "$tool" eval m.flux --params m.ckpt --data csv:rose.csv $cols
one_line "error: iris.csv:2: 's000' is not a number (column 0 'id'); features are numbers" \
  "$tool" train m.flux --data csv:iris.csv --label-col species --epochs 1

echo "csv classes: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
