#!/bin/sh
# check_signals.sh CFLUX - Ctrl-C and SIGTERM during `cflux train`: the step ends, a
# checkpoint of that place is written and the way to resume printed, exit 130 or 143;
# the resumed run ends where an uninterrupted one does; a second signal stops at once;
# and no signal, however timed, leaves a temporary file or a broken checkpoint.
set -u
tool=$1 pass=0 fail=0
t=$(mktemp -d /tmp/cflux-signals-XXXXXX)
pid=
trap '[ -n "$pid" ] && kill -KILL $pid 2> /dev/null; rm -rf "$t"' EXIT
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAILED: $*"; }

# 40000 samples, 16 features, 3 classes: epochs long enough to interrupt in the middle
awk 'BEGIN { srand(11); for (i = 0; i < 40000; i++) { s = ""; m = 0; k = 0;
  for (j = 0; j < 16; j++) { v = rand(); s = s "," sprintf("%.3f", v); if (j < 3 && v > m) { m = v; k = j } }
  print k s } }' > "$t/d.csv"
# 512 wide so that a run lasts over a second (about 1.6 s on a 2-core Zen 1): the
# signals below come at 0.5 s, or 0.1 s after epoch 1, and must find it running
echo 'model = Chain(Input(16), Affine(512), tanh, Affine(3), softmax)' > "$t/m.flux"
run() { "$tool" train "$t/m.flux" --data "csv:$t/d.csv" --batch 16 --seed 1 --epochs 4 "$@"; }
# start OUT ERR ARGS...: the same run in the background; $pid is cflux's own
start() {
  out=$1 err=$2; shift 2
  "$tool" train "$t/m.flux" --data "csv:$t/d.csv" --batch 16 --seed 1 --epochs 4 "$@" > "$out" 2> "$err" &
  pid=$!
}

# wait_for FILE: until it exists (at most 30 s)
wait_for() {
  n=0
  while [ ! -s "$1" ] && [ $n -lt 300 ]; do sleep 0.1; n=$((n + 1)); done
}

run --quiet --save "$t/whole.ckpt" > /dev/null

# SIGINT in epoch 2: a checkpoint of the place, the way back, exit 130
for sig in INT TERM; do
  rm -f "$t/log.csv" "$t/s.ckpt"
  start "$t/out" "$t/err" --save "$t/s.ckpt" --log "$t/log.csv"
  wait_for "$t/s.ckpt"   # epoch 1 is done and saved
  sleep 0.1
  kill -$sig $pid
  wait $pid; rc=$?
  want=130; [ $sig = TERM ] && want=143
  # in the middle of an epoch, or (on a loaded machine) while an epoch's end is written
  [ $rc -eq $want ] && grep -Eq "^cflux train: interrupted \(SIG$sig\) (in epoch [2-4] after [0-9]+ samples|after epoch [1-3])$" "$t/err" &&
    grep -q "^saved $t/s.ckpt$" "$t/err" && grep -q "^resume with: cflux train .*m.flux .* --resume $t/s.ckpt$" "$t/err" &&
    ok || bad "SIG$sig: exit $rc (want $want): $(cat "$t/err")"
  # the line the tool printed resumes the run, which ends where the uninterrupted one did
  cmd=$(sed -n 's/^resume with: cflux train //p' "$t/err")
  # shellcheck disable=SC2086
  "$tool" train $cmd --quiet > /dev/null 2> "$t/err2"; rc=$?
  [ $rc -eq 0 ] && cmp -s "$t/whole.ckpt" "$t/s.ckpt" && ok || bad "SIG$sig: the resumed run differs (exit $rc): $(cat "$t/err2")"
  [ "$(wc -l < "$t/log.csv")" -eq 5 ] && ok || bad "SIG$sig: log of the resumed run: $(cat "$t/log.csv")"
done

# without --save it says that nothing was saved (once epoch 1 is logged, the run has
# its handler: no sleep that a loaded machine could outlast)
start /dev/null "$t/err" --log "$t/log0.csv"
wait_for "$t/log0.csv"
kill -INT $pid
wait $pid; rc=$?
[ $rc -eq 130 ] && grep -q "nothing saved (no --save)" "$t/err" && ok || bad "no --save: exit $rc: $(cat "$t/err")"

# a second Ctrl-C exits at once; the checkpoint of epoch 1 stays readable
rm -f "$t/log.csv"
start /dev/null "$t/err" --save "$t/two.ckpt" --log "$t/log.csv"
wait_for "$t/two.ckpt"   # the checkpoint, not the log: the log is written first
kill -INT $pid; kill -INT $pid
wait $pid; rc=$?
[ $rc -eq 130 ] && "$tool" eval "$t/m.flux" --params "$t/two.ckpt" --data "csv:$t/d.csv" > /dev/null && ok ||
  bad "two signals: exit $rc: $(cat "$t/err")"

# signals at any moment, twice in a row, while checkpoints are written all the time
# (a large model on a few samples: most of the time goes into saving)
head -n 64 "$t/d.csv" > "$t/small.csv"
echo 'model = Chain(Input(16), Affine(1024), tanh, Affine(1024), tanh, Affine(3), softmax)' > "$t/big.flux"
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
  "$tool" train "$t/big.flux" --data "csv:$t/small.csv" --epochs 100000 --save "$t/big.ckpt" --quiet \
    > /dev/null 2>&1 &
  pid=$!
  sleep "0.$((i * 7 % 10))$((i % 9 + 1))"
  kill -TERM $pid 2> /dev/null
  [ $((i % 2)) -eq 0 ] && sleep 0.03 && kill -TERM $pid 2> /dev/null   # apart: two signals, not one
  wait $pid
done
left=$(ls "$t" | grep -c '\.tmp\.')
[ "$left" -eq 0 ] && ok || bad "$left temporary files left: $(ls "$t" | grep '\.tmp\.')"
[ ! -e "$t/big.ckpt" ] || "$tool" eval "$t/big.flux" --params "$t/big.ckpt" --data "csv:$t/small.csv" > /dev/null && ok ||
  bad "the checkpoint written under signals does not load"

echo "signals: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
