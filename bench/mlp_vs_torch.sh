#!/bin/sh
# mlp_vs_torch.sh [ROUNDS] [SECONDS] - training speed of the MLP 784-128-64-10 (relu,
# softmax cross-entropy, SGD, batch 64) in cflux and in PyTorch, interleaved in one
# run on this machine, then the median samples/s of each. PyTorch runs at each
# combination of its own threads and OpenBLAS's (OPENBLAS_NUM_THREADS), from 1 to the
# CPU count each, and is credited with its best; cflux runs with its defaults.
# A benchmark, not a test. Needs build/bench_mlp_train (make) and Debian's
# python3-torch with libopenblas0 (the reference BLAS is many times slower).
set -eu
rounds=${1:-5} secs=${2:-3}
here=$(cd "$(dirname "$0")/.." && pwd)
bin=$here/build/bench_mlp_train
py=/usr/bin/python3
[ -x "$bin" ] || { echo "build first: make"; exit 1; }
$py -c 'import torch' 2>/dev/null || { echo "PyTorch is missing: apt-get install python3-torch libopenblas0"; exit 1; }
cpus=$(nproc)
out=$(mktemp)
for r in $(seq "$rounds"); do
  "$bin" "$secs" 64 | sed 's/^/cflux /' >> "$out"
  for t in $(seq "$cpus"); do
    for ob in $(seq "$cpus"); do
      OPENBLAS_NUM_THREADS=$ob $py "$here/bench/mlp_torch.py" "$secs" 64 "$t" | sed "s/^/torch$t.$ob /" >> "$out"
    done
  done
done
median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
c=$(grep '^cflux ' "$out" | awk '{ print $3 }' | median)
best=0 bt=1
for t in $(seq "$cpus"); do
  for ob in $(seq "$cpus"); do
    m=$(grep "^torch$t.$ob " "$out" | awk '{ print $3 }' | median)
    echo "pytorch, $t thread(s), OpenBLAS $ob thread(s): median $m samples/s"
    if awk "BEGIN { exit !($m > $best) }"; then best=$m bt="$t thread(s), OpenBLAS $ob"; fi
  done
done
echo "cflux ($(grep '^cflux ' "$out" | head -n 1 | sed 's/.*(batch 64, //; s/, loss.*//')): median $c samples/s"
echo "pytorch at its best ($bt): median $best samples/s"
awk "BEGIN { printf \"cflux / pytorch = %.2f over $rounds interleaved rounds of ${secs} s\\n\", $c / $best }"
rm -f "$out"
