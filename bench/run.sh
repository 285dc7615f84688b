#!/bin/sh
# run.sh [ROUNDS] [SECONDS] - cflux side by side with PyTorch 2 and MXNet 1.9.1 (make
# bench) on the MLP of models/mlp.flux, then on the CNN of models/cnn.flux, the ResNet
# of models/resnet.flux and the character GPT of models/char-gpt.flux (and, when asked,
# the LSTM of models/char-rnn.flux): training samples/s (batch 64, SGD at lr 0.01; the LSTM and the
# GPT: batch 32, in characters/s and tokens/s), batch-1 latency, batch-1000 inference
# samples/s (the GPT: batch 100) and the training's peak memory; for the GPT also
# characters/s generated one at a time with a cache of keys and values (cflux bench's
# generate, PyTorch's incremental decoding in bench/peers.py). The GPT and the ResNet
# run against PyTorch only: MXNet 1.x has no causal attention to match, and its ResNet
# case is not written, so they are skipped there. For each model, each round runs every contender once at
# every thread count from 1 to the CPU count (the order of the contenders turns each
# round, so none always runs first); then bench/results.py prints, for each model, the
# medians of each contender at each thread count and a table of each at its best.
# The int8 cases, mlp-int8 and cnn-int8, time inference alone (batch 1000 and batch 1)
# of the MLP and the CNN: cflux in float32 ("cflux") and quantized ("cflux-int8": cflux
# bench --int8, static inputs calibrated on random samples, as cflux quantize does by
# default) against PyTorch's
# quantize_dynamic ("torch-int8") and onnxruntime's ("ort-int8"); their ratios are to
# cflux-int8. (cflux's lines still carry its float32 training figures; the report
# leaves them out.)
# A benchmark, not a test: figures on a shared machine are noisy.
#
# Defaults: 5 rounds of 3 s per case. The results go to $CFLUX_BENCH_OUT, else
# bench/results-DATE.json, with every raw line; the raw lines are also kept, as they
# come, in the same name with .raw.jsonl. Other settings:
#   CFLUX=path             the cflux binary (default build/cflux; needs `cflux bench`)
#   CFLUX_BENCH_MODELS     the models to run, of mlp, cnn, resnet, lstm, gpt, mlp-int8
#                          and cnn-int8 (default "mlp cnn resnet gpt mlp-int8 cnn-int8");
#                          lstm is models/char-rnn.flux, sequences of 50 characters;
#                          gpt models/char-gpt.flux, sequences of its context
#   CFLUX_BENCH_PEERS      the peers to run (default "torch mxnet")
#   CFLUX_BENCH_VENV       the peers' Python environment (bench/pyenv.sh makes it)
#   CFLUX_BENCH_PRESCOTT   1 (the default): also run cflux as "cflux-prescott", with
#                          OPENBLAS_CORETYPE=Prescott, OpenBLAS's generic SSE3 kernels,
#                          to show that cflux's speed does not depend on OpenBLAS's choice
set -eu
rounds=${1:-5} secs=${2:-3}
case $rounds in '' | *[!0-9]*) echo "usage: bench/run.sh [ROUNDS] [SECONDS]" >&2; exit 2 ;; esac
here=$(cd "$(dirname "$0")/.." && pwd)
cflux=${CFLUX:-$here/build/cflux}
models=${CFLUX_BENCH_MODELS:-mlp cnn resnet gpt mlp-int8 cnn-int8}
peers=${CFLUX_BENCH_PEERS-torch mxnet}
out=${CFLUX_BENCH_OUT:-$here/bench/results-$(date +%Y-%m-%d-%H%M%S).json}
raw=${out%.json}.raw.jsonl
cpus=$(nproc)
[ -x "$cflux" ] || { echo "run.sh: no $cflux: build first (make)" >&2; exit 1; }
# the peers that run a case (MXNet runs neither the GPT nor the ResNet; the int8 cases
# have int8 peers of their own)
peers_of() {
  case $1 in *-int8) echo torch-int8; echo ort-int8; return ;; esac
  for c in $peers; do case $c.$1 in mxnet.gpt | mxnet.resnet) ;; *) echo "$c" ;; esac; done
}
. "$here/bench/cases.sh"
check_cases run.sh "$models"
py=$(sh "$here/bench/pyenv.sh")

cpu_line
echo "load average at the start: $(cut -d ' ' -f 1-3 /proc/loadavg)"
load0=$(cut -d ' ' -f 1 /proc/loadavg)
# the runs of one round at one thread count, all models together: 1 or 2 of cflux a
# model, 3 of each peer that runs it
n=0
for m in $models; do
  case $m in
    *-int8) n=$((n + 2 + 2 * $(peers_of "$m" | wc -l))) ;;
    *)
      n=$((n + 1))
      if [ "${CFLUX_BENCH_PRESCOTT:-1}" = 1 ]; then n=$((n + 1)); fi
      n=$((n + 3 * $(peers_of "$m" | wc -l)))
      ;;
  esac
done
awk -v m="$(echo "$models" | wc -w)" -v r="$rounds" -v c="$cpus" -v n="$n" -v s="$secs" 'BEGIN { printf "%d models x %d rounds x %d thread counts: %d runs of %s s a round and thread count (about %.0f min)\n", m, r, c, n, s, r * c * n * (s + 3) / 60 + 0.5 }'

: > "$raw"
got=$(mktemp) err=$(mktemp)
trap 'rm -f "$got" "$err"' EXIT
# record NAME ROUND COMMAND... - runs COMMAND and appends its JSON object, tagged with
# NAME, ROUND and the case $m, to the raw lines; a failure stops the benchmark, with
# its output
record() {
  name=$1 round=$2
  shift 2
  if ! "$@" > "$got" 2> "$err" || ! "$py" "$here/bench/results.py" tag "$name" "$round" "$m" < "$got" >> "$raw"; then
    echo
    cat "$got" "$err" >&2
    echo "run.sh: $name failed: $*" >&2
    exit 1
  fi
}

for m in $models; do
  contenders="cflux $(peers_of "$m")"
  case $m in
    *-int8) contenders="cflux cflux-int8 $(peers_of "$m")" ;;
    *) if [ "${CFLUX_BENCH_PRESCOTT:-1}" = 1 ]; then contenders="cflux cflux-prescott $(peers_of "$m")"; fi ;;
  esac
  for r in $(seq "$rounds"); do
    # turn the order by one each round (split into words on purpose)
    # shellcheck disable=SC2086
    set -- $contenders
    i=1
    while [ "$i" -lt "$r" ]; do
      first=$1
      shift
      set -- "$@" "$first"
      i=$((i + 1))
    done
    order=$*
    printf '%s round %s/%s (%s):' "$m" "$r" "$rounds" "$order"
    for t in $(seq "$cpus"); do
      printf ' %s thread(s)' "$t"
      for c in $order; do
        if [ "$c" = cflux ]; then
          record cflux "$r" "$cflux" bench "$(model_file "$m")" --batch "$(batch_of "$m")" --threads "$t" \
            --seconds "$secs" --json
        elif [ "$c" = cflux-prescott ]; then
          record "$c" "$r" env OPENBLAS_CORETYPE=Prescott "$cflux" bench "$(model_file "$m")" \
            --batch "$(batch_of "$m")" --threads "$t" --seconds "$secs" --json
        elif [ "$c" = cflux-int8 ]; then
          record "$c" "$r" "$cflux" bench "$(model_file "$m")" --int8 --batch "$(batch_of "$m")" --threads "$t" \
            --seconds "$secs" --json
        else
          cases="train latency infer"
          case $c.$m in *-int8.*) cases="latency infer" ;; torch.gpt) cases="train latency infer generate" ;; esac
          for case in $cases; do
            record "$c" "$r" "$py" "$here/bench/peers.py" "$c" "$case" --model "${m%-int8}" --threads "$t" \
              --seconds "$secs"
          done
        fi
      done
    done
    echo
  done
done
echo "load average at the end: $(cut -d ' ' -f 1-3 /proc/loadavg)"
echo
"$py" "$here/bench/results.py" report "$raw" "$out" --rounds "$rounds" --seconds "$secs" \
  --commit "$(git -C "$here" describe --always --dirty 2> /dev/null || echo unknown)" \
  --load "$load0" "$(cut -d ' ' -f 1 /proc/loadavg)"
