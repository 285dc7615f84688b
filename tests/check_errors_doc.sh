#!/bin/sh
# check_errors_doc.sh CFLUX DOC - run every example of docs/errors.md and compare.
#
# In each ```console block, "$ cflux ..." runs the tool (in a directory holding the
# files that the page lists, made here); the lines after it are what it must print
# (each somewhere in its output, "..." standing for any text); the exit status
# follows from the first: "error:" 1, "cflux COMMAND:" 2, anything else 0. Other
# "$ ..." lines prepare files and are run as they are.
set -u
tool=$1 doc=$2 pass=0 fail=0
case $doc in /*) ;; *) doc=$(pwd)/$doc ;; esac
t=$(mktemp -d /tmp/cflux-errors-doc-XXXXXX)
trap 'rm -rf "$t"' EXIT
case $tool in /*) ;; *) tool=$(pwd)/$tool ;; esac
cd "$t" || exit 1

# ---- the files the page names ----
echo 'model = Chain(Input(4), Affine(16), tanh, Affine(3), softmax)' > m.flux
echo 'model = Chain(Input(4), Affine(16), relu, Affine(3), softmax)' > relu.flux
echo 'model = Chain(Input(4), Affine(8), tanh, Affine(3), softmax)' > other.flux
echo 'model = Chain(Input(4), Affine(3), relu)' > nosoft.flux
echo 'model = Chain(Input(4), Affine(3), softmax)' > small.flux
echo 'model = Chain(Input(3), Affine(3), softmax)' > small3.flux
echo 'model = Chain(Input(2), Affine(8), relu, Affine(1))' > house.flux
echo 'model = Chain(Input(4), x -> exp(x * 1000), Affine(3), softmax)' > ovf.flux
echo 'model = Chain(Input(784), Affine(3000000), softmax)' > big.flux
echo 'model = Chain(Input(8), x -> reshape(x, 8, 1), Affine(30), softmax)' > char.flux
echo 'model = Chain(Input(8), x -> reshape(x, 8, 1), Affine(20), softmax)' > char20.flux
echo 'model = Chain(Input(8), Affine(30), softmax)' > flat.flux
echo 'model = Chain(Input(2, 4), flatten, Affine(30), softmax)' > grid.flux
for i in $(seq 40); do echo 'the quick brown fox jumps over the lazy dog'; done > words.txt
sed 's/^the/The/' words.txt > other.txt
printf 'hello' > short.txt
: > empty.txt
echo 'model = Chain(Input(4), Embedding(10, 8), flatten, Affine(3), softmax)' > emb.flux
awk 'BEGIN { srand(7); print "label,a,b,c,d";
  for (i = 0; i < 300; i++) { a = rand(); b = rand(); c = rand(); d = rand();
    l = (a > b && a > c) ? 0 : (b > c ? 1 : 2); printf "%d,%.4f,%.4f,%.4f,%.4f\n", l, a, b, c, d } }' > train.csv
head -n 101 train.csv > test.csv
awk 'BEGIN { srand(3); print "rooms,area,price";
  for (i = 0; i < 200; i++) { r = int(1 + rand() * 5); a = int(30 + rand() * 150);
    printf "%d,%d,%d\n", r, a, 50000 + 20000 * r + 1500 * a } }' > house.csv
awk 'BEGIN { srand(5); print "p0,p1,p2,label"; for (i = 0; i < 100; i++) printf "0,%.3f,%.3f,%d\n", rand(), rand(), i % 3 }' > last.csv
sed '5s/.*/1,0.5,abc,0.1,0.2/' train.csv > badrow.csv
sed '7s/.*/1,0.5,0.1/' train.csv > ragged.csv
sed '9s/^[0-9]/7/' train.csv > range.csv
printf '\000\000\010\003\000\000\000\002\000\000\000\002\000\000\000\002\001\002\003\004\005\006\007\010' > img.idx
printf '\000\000\010\001\000\000\000\003\000\001\002' > lab.idx
printf '\000\000\010\003\000\000\000\002\000\000\000\003\000\000\000\003\001\002\003\004\005\006\007\010\011\001\002\003\004\005\006\007\010\011' > img3.idx
printf '\000\000\010\001\000\000\000\002\000\001' > lab2.idx
awk 'BEGIN { print "label,a,b,c,d"; for (i = 0; i < 200000; i++) printf "%d,0.1,0.2,0.3,0.4\n", i % 3 }' > many.csv
awk 'BEGIN { for (i = 0; i < 5; i++) { s = i % 3; for (j = 0; j < 784; j++) s = s ",0.5"; print s } }' > wide.csv
printf 'PK\003\004\024\000\000\000\010\000' > w.pt   # a zip's first bytes, as torch.save writes
# an image folder: pics/cat and pics/dog, three 2x2 grey PNGs each; px.flux reads them
echo 'model = Chain(Input(1, 2, 2), flatten, Affine(2), softmax)' > px.flux
echo 'model = Chain(Input(1, 3, 3), flatten, Affine(2), softmax)' > px3.flux
for c in cat dog; do mkdir -p pics/$c; for i in 1 2 3; do
  printf '\211\120\116\107\015\012\032\012\000\000\000\015\111\110\104\122\000\000\000\002\000\000\000\002\010\000\000\000\000\127\335\122\370\000\000\000\016\111\104\101\124\170\332\143\140\010\140\130\360\037\000\003\205\001\360\304\335\344\136\000\000\000\000\111\105\116\104\256\102\140\202' > pics/$c/$i.png
done; done
"$tool" train px.flux --data images:pics --epochs 1 --batch 2 --save px.ckpt --quiet > /dev/null || exit 1
"$tool" train m.flux --data csv:train.csv --epochs 2 --seed 3 --save m.ckpt --quiet > /dev/null || exit 1
"$tool" train char.flux --data text:words.txt --epochs 1 --batch 16 --save char.ckpt --quiet > /dev/null || exit 1
# weights for small.flux (1.W (4, 3), 1.b (1, 3)): one NaN, or all 3e38
weights() {  # weights FILE HEX: a safetensors file, every float the 4 bytes HEX
  h='{"1.W":{"dtype":"F32","shape":[4,3],"data_offsets":[0,48]},"1.b":{"dtype":"F32","shape":[1,3],"data_offsets":[48,60]}}'
  { printf "\\$(printf %03o ${#h})\\000\\000\\000\\000\\000\\000\\000%s" "$h"
    for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do printf "$3"; done; } > "$1"
  [ -n "$2" ] && printf "$2" | dd of="$1" bs=1 seek=$((8 + ${#h} + 20)) conv=notrunc 2> /dev/null
}
weights nan.st '\000\000\300\177' '\000\000\000\077'
weights huge.st '' '\346\261\141\177'
weights ok.st '' '\000\000\000\077'   # every weight 0.5
# m.ckpt quantized (q.st), and q.st with the first scale of 1.W made 0 (zero.st)
"$tool" quantize m.flux --params m.ckpt --data csv:train.csv --save q.st > /dev/null || exit 1
n=$(od -An -tu4 -N4 q.st | tr -d ' ')
off=$(head -c $((8 + n)) q.st | grep -ao '"1.W.qscale":{[^}]*}' | sed 's/.*"data_offsets":\[\([0-9]*\),.*/\1/')
cp q.st zero.st
printf '\000\000\000\000' | dd of=zero.st bs=1 seek=$((8 + n + off)) conv=notrunc 2> /dev/null
# m.ckpt with element 0 of Adam's second moment of 1.W made -1 (the header says where it is)
n=$(od -An -tu4 -N4 m.ckpt | tr -d ' ')
off=$(head -c $((8 + n)) m.ckpt | grep -ao '"optim.adam.v.1.W":{[^}]*}' | sed 's/.*"data_offsets":\[\([0-9]*\),.*/\1/')
cp m.ckpt negv.ckpt
printf '\000\000\200\277' | dd of=negv.ckpt bs=1 seek=$((8 + n + off)) conv=notrunc 2> /dev/null

# match LINE PATTERN: the line is the pattern, "..." matching any text
match() {
  awk -v s="$1" -v p="$2" 'BEGIN {
    n = split(p, part, /\.\.\./)
    if (n == 1) exit !(s == p)
    if (substr(s, 1, length(part[1])) != part[1]) exit 1
    at = length(part[1]) + 1
    for (i = 2; i < n; i++) { k = index(substr(s, at), part[i]); if (!k) exit 1; at += k - 1 + length(part[i]) }
    last = part[n]
    exit !(length(s) - at + 1 >= length(last) && substr(s, length(s) - length(last) + 1) == last) }'
}

# check: run the pending command and compare with the lines expected of it
cmd= expected=
check() {
  [ -n "$cmd" ] || return 0
  # "VAR=value cflux ARGS": the settings, then the tool
  envs=${cmd%%cflux *}
  # shellcheck disable=SC2086
  eval "$envs \"\$tool\" ${cmd#*cflux }" > out 2>&1
  rc=$?
  first=$(printf '%s\n' "$expected" | sed -n 1p)
  case $first in error:*) want=1 ;; cflux\ *) want=2 ;; *) want=0 ;; esac
  ok=1
  [ "$rc" -eq "$want" ] || ok=0
  while IFS= read -r e; do
    [ -n "$e" ] || continue
    found=0
    while IFS= read -r o; do match "$o" "$e" && { found=1; break; }; done < out
    [ $found -eq 1 ] || ok=0
  done <<EOF
$expected
EOF
  if [ $ok -eq 1 ]; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAILED: $cmd (exit $rc, want $want)"; echo "  expected: $expected"; sed 's/^/  got: /' out
  fi
  cmd= expected=
}

inblock=0
while IFS= read -r line; do
  case $line in
    '```console') inblock=1; continue ;;
    '```'*) [ $inblock -eq 1 ] && check; inblock=0; continue ;;
  esac
  [ $inblock -eq 1 ] || continue
  case $line in
    '$ cflux '* | '$ '[A-Z]*=*' cflux '*) check; cmd=${line#\$ } ;;
    '$ '*) check; sh -c "${line#\$ }" || { fail=$((fail + 1)); echo "FAILED: setup: $line"; } ;;
    *) expected="$expected$line
" ;;
  esac
done < "$doc"

echo "errors doc: $pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -ge 30 ]
