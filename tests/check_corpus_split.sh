#!/bin/sh
# check_corpus_split.sh CFLUX SRC - cflux reads Debian's fortunes corpus as
# bench/text_baselines.py does, so that the baselines there score exactly the
# characters a model's test loss is over: the same characters train and are held out,
# the same sequences are scored, the same alphabet, at two sequence lengths.
set -u
tool=$1 src=$2 pass=0 fail=0
corpus=/usr/share/games/fortunes
t=$(mktemp -d /tmp/cflux-corpus-split-XXXXXX)
trap 'rm -rf "$t"' EXIT
if [ ! -d "$corpus" ]; then
  echo "corpus split: $corpus is missing (Debian's fortunes package: make test installs it)"
  exit 1
fi
for T in 128 50; do
  echo "model = Chain(Input($T), Embedding(115, 4), Affine(115), softmax)" > "$t/m.flux"
  "$tool" train "$t/m.flux" --data "text:$corpus" --epochs 1 --limit-batches 1 --batch 16 > "$t/out" 2>&1
  python3 "$src/bench/text_baselines.py" "$corpus" --seq "$T" --split-only > "$t/py" 2>&1
  # cflux: "N train, M test sequences of T characters", "test: ..., H characters in all",
  # "of V distinct"; the script: "C characters train, H held out, S of them scored, V distinct"
  n=$(sed -n "s/.*: \([0-9]*\) train, \([0-9]*\) test sequences of $T characters.*/\1/p" "$t/out")
  m=$(sed -n "s/.*: \([0-9]*\) train, \([0-9]*\) test sequences of $T characters.*/\2/p" "$t/out")
  h=$(sed -n 's/^test: the last 10% of each file, \([0-9]*\) characters in all$/\1/p' "$t/out")
  v=$(sed -n 's/^task: the next character, of \([0-9]*\) distinct.*/\1/p' "$t/out")
  c=$(sed -n 's/.*: \([0-9]*\) characters train, \([0-9]*\) held out, \([0-9]*\) of them scored, \([0-9]*\) distinct$/\1 \2 \3 \4/p' "$t/py")
  set -- $c
  if [ -n "$n" ] && [ $# -eq 4 ] && [ "$n" -eq $((($1 - 1) / T)) ] && [ "$h" = "$2" ] && [ $((m * T)) -eq "$3" ] &&
     [ "$v" = "$4" ]; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "corpus split, T $T: cflux: $n train, $m test sequences, $h held out, $v distinct; text_baselines.py: $c"
    cat "$t/out" "$t/py"
  fi
done
echo "corpus split: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
