#!/bin/sh
# compare.sh OLD NEW [ROUNDS] [SECONDS] - two cflux binaries on the cases of make bench
# (bench/run.sh): the MLP of models/mlp.flux, the CNN of models/cnn.flux and the ResNet
# of models/resnet.flux at batch 64, the character GPT of models/char-gpt.flux and the LSTM of models/char-rnn.flux at
# batch 32 (sequences of its context and of 50: their figures in tokens/s and characters/s), each at
# every thread count from 1 to the CPU count. Each round runs OLD and NEW once on every
# case, one right after the other, and turns which goes first each round, so that both
# see the same load; then bench/results.py prints, for each case, the median of each
# figure for both (training and batch inference samples/s, batch-1 latency, peak
# memory), their ratio NEW/OLD (lower is better for latency and memory) and the range
# of the rounds' ratios, as markdown tables. For a change that must not slow cflux down.
#
# Defaults: 5 rounds of 3 s per run. OLD and NEW are paths of binaries with `cflux
# bench`; to compare one binary with itself under some setting, give a script that
# sets it and runs the binary (exec env CFLUX_PASSES=none build/cflux "$@"). Settings:
#   CFLUX_BENCH_MODELS     the cases, of mlp, cnn, resnet, lstm and gpt (default all five)
#   CFLUX_BENCH_THREADS    the thread counts (default 1 to the CPU count)
#   CFLUX_BENCH_OUT        where the raw lines go (default
#                          bench/results-compare-DATE.raw.jsonl), one JSON line a run
set -eu
usage="usage: bench/compare.sh OLD NEW [ROUNDS] [SECONDS]"
if [ $# -lt 2 ] || [ $# -gt 4 ]; then echo "$usage" >&2; exit 2; fi
old=$1 new=$2 rounds=${3:-5} secs=${4:-3}
case $rounds in '' | *[!0-9]*) echo "$usage" >&2; exit 2 ;; esac
here=$(cd "$(dirname "$0")/.." && pwd)
models=${CFLUX_BENCH_MODELS:-mlp cnn resnet gpt lstm}
threads=${CFLUX_BENCH_THREADS:-$(seq -s ' ' "$(nproc)")}
raw=${CFLUX_BENCH_OUT:-$here/bench/results-compare-$(date +%Y-%m-%d-%H%M%S).raw.jsonl}
for b in "$old" "$new"; do
  [ -x "$b" ] || { echo "compare.sh: $b is not a program" >&2; exit 1; }
done
# shellcheck source=bench/cases.sh
. "$here/bench/cases.sh"
check_cases compare.sh "$models"

cpu_line
echo "load average at the start: $(cut -d ' ' -f 1-3 /proc/loadavg)"
load0=$(cut -d ' ' -f 1 /proc/loadavg)
echo "old: $old ($(cksum < "$old" | cut -d ' ' -f 1))"
echo "new: $new ($(cksum < "$new" | cut -d ' ' -f 1))"
runs=$(($(echo "$models" | wc -w) * $(echo "$threads" | wc -w) * 2))
awk -v r="$rounds" -v n="$runs" -v s="$secs" 'BEGIN { printf "%d rounds of %d runs of %s s (about %.0f min)\n", r, n, s, r * n * (2 * s + 4) / 60 + 0.5 }'

: > "$raw"
got=$(mktemp) err=$(mktemp)
trap 'rm -f "$got" "$err"' EXIT
# record NAME ROUND BINARY - runs BINARY on the case $m at $t threads and appends its
# JSON object, tagged with NAME, ROUND and $m, to the raw lines; a failure stops the
# comparison, with its output
record() {
  if ! "$3" bench "$(model_file "$m")" --batch "$(batch_of "$m")" --threads "$t" --seconds "$secs" --json \
      > "$got" 2> "$err" || ! python3 "$here/bench/results.py" tag "$1" "$2" "$m" < "$got" >> "$raw"; then
    echo
    cat "$got" "$err" >&2
    echo "compare.sh: $1 failed on $m at $t thread(s): $3" >&2
    exit 1
  fi
}

for r in $(seq "$rounds"); do
  if [ $((r % 2)) = 1 ]; then order="old new"; else order="new old"; fi
  printf 'round %s/%s (%s first):' "$r" "$rounds" "${order%% *}"
  for m in $models; do
    for t in $threads; do
      printf ' %s@%s' "$m" "$t"
      for c in $order; do
        if [ "$c" = old ]; then record cflux-old "$r" "$old"; else record cflux-new "$r" "$new"; fi
      done
    done
  done
  echo
done
echo "load average at the end: $(cut -d ' ' -f 1-3 /proc/loadavg)"
echo
python3 "$here/bench/results.py" compare "$raw" --load "$load0" "$(cut -d ' ' -f 1 /proc/loadavg)"
echo
echo "raw lines: $raw"
