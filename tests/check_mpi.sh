#!/bin/sh
# check_mpi.sh CFLUX MPIEXEC PYTHON - data-parallel training under Open MPI's mpirun:
#   - 2 ranks with 32 rows each of every batch of 64 end 20 steps with the parameters
#     of 1 rank with batches of 64 (within 1e-5); so do 2 ranks given 35 and 36 rows of
#     batches of 71, and then 0 and 1 of the last (the gradients weighted by rows);
#   - BatchNorm's running statistics after 2 ranks are the mean of theirs, as 1 rank's;
#   - ranks given other data, test data, --batch, --seed or model stop at the start,
#     exit 1, and rank 0 alone says what differs;
#   - SIGTERM to one rank is reported as SIGTERM (not SIGINT) by every rank;
#   - a rank killed (SIGKILL) or hung (SIGSTOP) makes the others exit with an error
#     within 30 s, and the last checkpoint stays readable;
#   - a 2-rank checkpoint resumes on 1 rank, and a 1-rank one on 2.
# As root, mpirun needs OMPI_ALLOW_RUN_AS_ROOT; more ranks than cores --oversubscribe.
set -u
tool=$1 mpiexec=$2 py=$3 name=mpi
. "$(dirname "$0")/train_setup.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
mpi() { n=$1; shift; "$mpiexec" --oversubscribe -np "$n" "$tool" "$@"; }
awk 'BEGIN { srand(11); print "label,a,b,c,d"; for (i = 0; i < 640; i++) { a = rand(); b = rand(); c = rand(); d = rand();
  l = (a > b && a > c) ? 0 : (b > c ? 1 : 2); printf "%d,%.4f,%.4f,%.4f,%.4f\n", l, a, b, c, d } }' > "$t/eq.csv"
run() { n=$1; shift; mpi "$n" train "$t/m.flux" --data "csv:$t/eq.csv" --batch 64 --lr 0.01 --threads 1 --seed 5 "$@"; }
same() {  # same A B: the parameters of two checkpoints within 1e-5
  "$py" -c '
import sys
from safetensors.numpy import load_file
a, b = load_file(sys.argv[1]), load_file(sys.argv[2])
keys = [k for k in a if not k.startswith(("optim.", "carry."))]
assert keys and all(k in b for k in keys), "not the same parameters"
d = max(float(abs(a[k] - b[k]).max()) for k in keys)
print("largest difference %.3g" % d)
sys.exit(0 if d <= 1e-5 else 1)' "$1" "$2"
}

# equivalence: 640 samples in batches of 64, 2 epochs: 20 steps
"$tool" train "$t/m.flux" --data "csv:$t/eq.csv" --batch 64 --lr 0.01 --threads 1 --seed 5 --epochs 2 \
  --save "$t/one.ckpt" --quiet > /dev/null 2>&1 || bad "1 process did not train"
run 2 --epochs 2 --save "$t/two.ckpt" > "$t/out" 2>&1 || bad "2 ranks did not train: $(tail -n 5 "$t/out")"
grep -q '^data-parallel over 2 ranks: each takes its share of every batch of 64 (32 to 32 rows)' "$t/out" && ok ||
  bad "the run does not say it is data-parallel: $(head -n 3 "$t/out")"
[ "$(grep -c '^epoch ' "$t/out")" -eq 2 ] && ok || bad "rank 0 alone should print the epochs: $(cat "$t/out")"
[ "$(grep -c '^test accuracy\|^train accuracy' "$t/out")" -eq 1 ] && ok || bad "rank 0 alone should print the result line: $(cat "$t/out")"
run 2 --epochs 2 --stop-after 1 > "$t/out" 2>&1 || bad "2 ranks did not stop after 1 epoch: $(tail -n 5 "$t/out")"
[ "$(grep -c '^note: stopped after epoch 1' "$t/out")" -eq 1 ] && ok || bad "rank 0 alone should note the stop: $(cat "$t/out")"
same "$t/one.ckpt" "$t/two.ckpt" && ok || bad "2 ranks x 32 and 1 x 64 end with other parameters"

# shares that differ: batches of 71 are 35 and 36 rows, the last (640 = 9 * 71 + 1)
# 0 and 1: each rank's gradient counts by its rows, as in one process's mean
"$tool" train "$t/m.flux" --data "csv:$t/eq.csv" --batch 71 --lr 0.01 --threads 1 --seed 5 --epochs 2 \
  --save "$t/one71.ckpt" --quiet > /dev/null 2>&1 || bad "1 process did not train batches of 71"
run 2 --batch 71 --epochs 2 --save "$t/two71.ckpt" > "$t/out" 2>&1 || bad "2 ranks did not train batches of 71: $(tail -n 5 "$t/out")"
same "$t/one71.ckpt" "$t/two71.ckpt" && ok || bad "2 ranks x 35/36 rows and 1 x 71 end with other parameters"

# BatchNorm: each rank's running statistics follow its shards; averaged after each
# epoch, the mean is the one of whole batches (the mean is linear: within 1e-5) and the
# variance within 1% (each shard's misses the spread between shards' means)
echo 'model = Chain(Input(4), BatchNorm(4), Affine(16), tanh, Affine(3), softmax)' > "$t/bn.flux"
for n in 1 2; do
  mpi $n train "$t/bn.flux" --data "csv:$t/eq.csv" --lr 0.01 --threads 1 --seed 5 --epochs 2 --save "$t/bn$n.ckpt" \
    > "$t/out" 2>&1 || bad "BatchNorm on $n ranks did not train: $(tail -n 5 "$t/out")"
done
"$py" -c '
import sys
from safetensors.numpy import load_file
a, b = load_file(sys.argv[1]), load_file(sys.argv[2])
mean, var = a["1.mean"], a["1.var"]
dm, dv = float(abs(mean - b["1.mean"]).max()), float((abs(var - b["1.var"]) / var).max())
print("running mean %.3g (%.3g..%.3g), variance %.3g relative" % (dm, mean.min(), mean.max(), dv))
sys.exit(0 if dm <= 1e-5 and dv <= 0.01 and mean.min() > 0.3 else 1)' "$t/bn1.ckpt" "$t/bn2.ckpt" && ok ||
  bad "BatchNorm: 2 ranks end with other running statistics than 1"

# ranks given different things: every rank stops before the first step, rank 0 alone
# names the first difference (rank 0 gets the first arguments, rank 1 the second)
awk -F, 'NR == 5 { $2 = "0.9999" } 1' OFS=, "$t/train.csv" > "$t/other.csv"
head -n 300 "$t/train.csv" > "$t/short.csv"
head -n 101 "$t/other.csv" > "$t/other-test.csv"
echo 'model = Chain(Input(4), Affine(16), relu, Affine(3), softmax)' > "$t/relu.flux"
differ() {  # differ "RANK 0'S ARGUMENTS" "RANK 1'S" MESSAGE
  # shellcheck disable=SC2086
  CFLUX_DIST_TIMEOUT=5 "$mpiexec" --oversubscribe -np 1 "$tool" train $1 --threads 1 --epochs 2 --quiet : \
    -np 1 "$tool" train $2 --threads 1 --epochs 2 --quiet > "$t/out" 2>&1
  rc=$?
  [ $rc -ne 0 ] && [ "$(grep -c 'error' "$t/out")" -eq 1 ] && grep -qxF "error: the ranks disagree: $3" "$t/out" && ok ||
    bad "ranks given $1 and $2: exit $rc, not the one message '$3': $(grep -v '^-*$' "$t/out" | head -n 4)"
}
d="$t/m.flux --data csv:$t/train.csv"
differ "$d" "$t/m.flux --data csv:$t/short.csv" "rank 1's training data has 299 rows, rank 0's has 300"
differ "$d" "$t/m.flux --data csv:$t/other.csv" \
  "rank 1's training data differs from rank 0's (the same 300 rows, other content)"
differ "$d,$t/test.csv" "$d,$t/other-test.csv" "rank 1's test data differs from rank 0's (the same 100 rows, other content)"
differ "$d --batch 64" "$d --batch 32" "rank 1's --batch is 32, rank 0's is 64"
differ "$d --seed 1" "$d --seed 2" "rank 1's --seed is 2, rank 0's is 1"
differ "$d" "$t/relu.flux --data csv:$t/train.csv" "rank 1's model differs from rank 0's (the same 131 weights, another graph)"

# resume a 2-rank checkpoint on 1 rank, and a 1-rank one on 2 ranks
"$tool" train "$t/m.flux" --data "csv:$t/eq.csv" --batch 64 --lr 0.01 --threads 1 --seed 5 --epochs 3 \
  --resume "$t/two.ckpt" --save "$t/two-one.ckpt" > "$t/out" 2>&1 &&
  grep -q '^epoch  3/3 ' "$t/out" && ok || bad "a 2-rank checkpoint did not resume on 1 rank: $(tail -n 3 "$t/out")"
run 2 --epochs 3 --resume "$t/one.ckpt" --save "$t/one-two.ckpt" > "$t/out" 2>&1 &&
  grep -q '^epoch  3/3 ' "$t/out" && ok || bad "a 1-rank checkpoint did not resume on 2 ranks: $(tail -n 3 "$t/out")"
same "$t/two-one.ckpt" "$t/one-two.ckpt" && ok || bad "the two resumed runs differ"

# a rank killed, then a rank hung: the others stop with an error, well within 30 s
for sig in KILL STOP; do
  rm -f "$t/long.ckpt"
  CFLUX_DIST_TIMEOUT=5 run 2 --epochs 100000 --save "$t/long.ckpt" > "$t/out" 2>&1 &
  job=$!
  pids=""
  for i in $(seq 100); do   # both ranks running, and a checkpoint written
    pids=$(pgrep -f "$t/m.flux" | while read -r p; do [ "$(cat /proc/"$p"/comm 2> /dev/null)" = cflux ] && echo "$p"; done)
    [ "$(echo "$pids" | wc -w)" -eq 2 ] && [ -s "$t/long.ckpt" ] && break
    sleep 0.1
  done
  victim=$(echo "$pids" | tail -n 1)
  start=$(date +%s)
  kill -"$sig" "$victim"
  gone=0
  for i in $(seq 300); do kill -0 "$job" 2> /dev/null || { gone=1; break; }; sleep 0.1; done
  wait "$job"
  rc=$?
  secs=$(($(date +%s) - start))
  [ $gone = 1 ] && [ $rc -ne 0 ] && ok || bad "SIG$sig to one rank: mpirun exit $rc after ${secs} s: $(tail -n 5 "$t/out")"
  [ "$sig" = KILL ] || grep -q 'no answer from the other ranks for 5 s' "$t/out" && ok ||
    bad "SIG$sig: no error naming the hang: $(tail -n 5 "$t/out")"
  "$tool" eval "$t/m.flux" --params "$t/long.ckpt" --data "csv:$t/eq.csv" > /dev/null 2>&1 && ok ||
    bad "SIG$sig: the checkpoint is not readable"
  kill -9 $pids 2> /dev/null
  echo "mpi: SIG$sig to rank $victim: the run stopped with exit $rc after ${secs} s"
done

# SIGTERM to one rank: every rank stops after the same step and says SIGTERM (rank 0,
# which got no signal, reported SIGINT), and the job exits with an error status
rm -f "$t/long.ckpt"
run 2 --epochs 100000 --save "$t/long.ckpt" > "$t/out" 2>&1 &
job=$!
for i in $(seq 100); do
  pids=$(pgrep -f "$t/m.flux" | while read -r p; do [ "$(cat /proc/"$p"/comm 2> /dev/null)" = cflux ] && echo "$p"; done)
  [ "$(echo "$pids" | wc -w)" -eq 2 ] && [ -s "$t/long.ckpt" ] && break
  sleep 0.1
done
kill -TERM "$(echo "$pids" | tail -n 1)"
wait "$job"
rc=$?
[ $rc -ne 0 ] && [ "$(grep -o 'interrupted (SIGTERM)' "$t/out" | wc -l)" -eq 2 ] && ! grep -q 'interrupted (SIGINT)' "$t/out" && ok ||
  bad "SIGTERM to one rank: exit $rc: $(grep interrupted "$t/out")"

echo "mpi: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
