#!/bin/sh
# check_outputs.sh CFLUX - what the tool's outputs may replace: an output that is also
# an input, or another output, is refused with both roles named; a device node, a
# FIFO and the process's standard output are written through, never replaced; a
# read-only file is refused and a replaced one keeps its mode; a second cflux writing
# the same checkpoint is refused; temporaries a killed run left are cleaned up.
set -u
tool=$1 name=outputs
case $tool in /*) ;; *) tool=$(pwd)/$tool ;; esac
. "$(dirname "$0")/train_setup.sh"
cd "$t" || exit 1
train() { "$tool" train m.flux --data "csv:train.csv,test.csv" --batch 32 --seed 3 --epochs 1 --quiet "$@"; }
train --save m.ckpt > /dev/null || bad "setup: train"
"$tool" export m.flux --params m.ckpt --to-torch m.st > /dev/null || bad "setup: export"
printf 'classA\nclassB\nclassC\n' > classes.txt
echo '1 1' > map.txt
cp -p m.ckpt m0.ckpt

# refused ROLE_IN ROLE_OUT FILE ARGS...: exit 1, one line naming both roles, FILE unchanged
refused() {
  rin=$1 rout=$2 f=$3; shift 3
  cp -p "$f" before 2> /dev/null || : > before
  "$tool" "$@" > out 2> err; rc=$?
  [ $rc -eq 1 ] && [ "$(wc -l < err)" -eq 1 ] &&
    grep -q -- "^error: $f is both $rin (read) and $rout (written): writing it would destroy the input; give $rout another path$" err &&
    cmp -s before "$f" && ok || bad "$* -> exit $rc: $(cat err)"
  cp -p before "$f" 2> /dev/null   # so that a failure here does not spoil the next case
}
# ---- 1. an output that is also an input: every pair, each command ----
for o in --save --log --plot --report --keep-best; do
  extra=; [ $o = --keep-best ] && extra="--val 0.2"
  refused "the model file" $o m.flux train m.flux --data csv:train.csv,test.csv $extra $o m.flux
  refused --data $o train.csv train m.flux --data csv:train.csv,test.csv $extra $o train.csv
  refused --data $o test.csv train m.flux --data csv:train.csv,test.csv $extra $o test.csv
  refused --init $o m.ckpt train m.flux --data csv:train.csv --init m.ckpt $extra $o m.ckpt
  refused --params $o m.ckpt train m.flux --data csv:train.csv --params m.ckpt $extra $o m.ckpt
  refused --classes $o classes.txt train m.flux --data csv:train.csv --classes classes.txt $extra $o classes.txt
done
for o in --log --plot --report --keep-best; do
  extra=; [ $o = --keep-best ] && extra="--val 0.2"
  refused --resume $o m.ckpt train m.flux --data csv:train.csv --resume m.ckpt $extra $o m.ckpt
done
for o in --onnx --to-torch; do
  refused --params $o m.ckpt export m.flux --params m.ckpt $o m.ckpt
  refused "the model file" $o m.flux export m.flux --params m.ckpt $o m.flux
done
refused --map --to-torch map.txt export m.flux --params m.ckpt --map map.txt --to-torch map.txt
refused --from-torch --save m.st import m.flux --from-torch m.st --save m.st
refused "the model file" --save m.flux import m.flux --from-torch m.st --save m.flux
refused --map --save map.txt import m.flux --from-torch m.st --map map.txt --save map.txt
refused "the model file" -o m.flux graph m.flux -o m.flux
"$tool" graph m.flux -o - > g.dot 2> err && grep -q '^digraph' g.dot && [ ! -e ./-.lock ] && [ ! -e ./- ] && ok ||
  bad "graph -o - (the standard output): $(cat err)"
refused "the model file" --plot m.flux lr-find m.flux --data csv:train.csv --plot m.flux
refused --data --plot train.csv lr-find m.flux --data csv:train.csv --plot train.csv
# through another name: a link, a path with ./ and ../
ln -s m.ckpt link.ckpt
mkdir -p sub
refused --params --onnx link.ckpt export m.flux --params m.ckpt --onnx link.ckpt
refused --params --onnx sub/../m.ckpt export m.flux --params ./m.ckpt --onnx sub/../m.ckpt
# --resume X --save X goes on from the checkpoint and saves over it: that is resuming
"$tool" train m.flux --data csv:train.csv --epochs 2 --resume m.ckpt --save m.ckpt > out 2> err &&
  grep -q '^saved m.ckpt (epoch 2)$' out && ! cmp -s m.ckpt m0.ckpt && ok || bad "--resume X --save X: $(cat out err)"
cp -p m0.ckpt m.ckpt

# ---- two outputs that are one file ----
both() {   # both FILE AS_SHOWN ROLE1 ROLE2 ARGS...
  f=$1 shown=$2 r1=$3 r2=$4; shift 4
  rm -f "$f"
  "$tool" "$@" > out 2> err; rc=$?
  [ $rc -eq 1 ] && grep -q -- "^error: $shown is both $r1 and $r2: one would overwrite the other; give each its own path$" err &&
    [ ! -e "$f" ] && ok || bad "$* -> exit $rc: $(cat err)"
}
both run.ckpt run.ckpt --save --report train m.flux --data csv:train.csv --save run.ckpt --report run.ckpt
both run.ckpt ./run.ckpt --save --keep-best train m.flux --data csv:train.csv --val 0.2 --save run.ckpt --keep-best ./run.ckpt
both out.x sub/../out.x --log --plot train m.flux --data csv:train.csv --log out.x --plot sub/../out.x
both out.x out.x --to-torch --onnx export m.flux --params m.ckpt --to-torch out.x --onnx out.x

# ---- 2. what is not a regular file: written through, or refused ----
if [ "$(id -u)" -eq 0 ]; then
  mknod null c 1 3 && chmod 666 null   # /dev/null's numbers, in this folder: never the system's own
  "$tool" export m.flux --params m.ckpt --onnx null > out 2> err && [ -c null ] &&
    [ "$(stat -c %t:%T null)" = "1:3" ] && ok || bad "export --onnx onto a device node: $(cat err); $(ls -l null)"
  train --save null --log null --plot null > /dev/null 2> err && [ -c null ] && ok || bad "train --save onto a device node: $(cat err)"
  mknod disk b 7 250
  train --save disk > /dev/null 2> err; rc=$?
  [ $rc -eq 1 ] && grep -q "^error: disk: cannot write: it is a block device (a disk); cflux writes regular files, terminals, FIFOs and /dev/null$" err &&
    [ -b disk ] && ok || bad "train --save onto a block device: exit $rc: $(cat err)"
else
  echo "outputs: not root: the device-node cases (mknod) are checked in CI"
fi
mkfifo fifo
timeout 30 cat fifo > from_fifo &   # a writer that never comes fails, not hangs
reader=$!
"$tool" export m.flux --params m.ckpt --onnx fifo > out 2> err; rc=$?
wait $reader
"$tool" export m.flux --params m.ckpt --onnx plain.onnx > /dev/null
[ $rc -eq 0 ] && [ -p fifo ] && cmp -s from_fifo plain.onnx && ok || bad "export --onnx onto a FIFO: exit $rc: $(cat err); $(wc -c < from_fifo) bytes read"
# the log reaches a FIFO's one reader as one stream: the header, then each epoch once
# (rewritten and closed every epoch, it ended the reader after epoch 1 and left epoch
# 2 waiting for another)
timeout 60 cat fifo > from_fifo &
reader=$!
timeout 60 "$tool" train m.flux --data csv:train.csv --epochs 3 --quiet --log fifo > out 2> err; rc=$?
wait $reader
[ $rc -eq 0 ] && [ "$(grep -c '^epoch,' from_fifo)" -eq 1 ] && [ "$(grep -c '^[123],' from_fifo)" -eq 3 ] && ok ||
  bad "train --log onto a FIFO: exit $rc: $(cat err); read: $(cat from_fifo)"
# /dev/stdout (a link to /proc/self/fd/1; one of the same made here, so that a wrong
# tool replaces this link and not the system's): the log goes where the standard
# output goes, and the file it was sent to keeps its inode; /dev/fd/1 the same
ln -s /proc/self/fd/1 stdout
train --epochs 2 --log stdout > so.txt 2> err; rc=$?
ino=$(stat -c %i so.txt)
# (a stream keeps what it was sent: the header once, then each epoch once)
[ $rc -eq 0 ] && [ -L stdout ] && [ "$(grep -c '^epoch,train_loss' so.txt)" -eq 1 ] &&
  [ "$(grep -c '^1,' so.txt)" -eq 1 ] && [ "$(grep -c '^2,' so.txt)" -eq 1 ] && ok ||
  bad "--log onto a link to /proc/self/fd/1: exit $rc: $(cat so.txt err)"
train --epochs 1 --log /dev/fd/1 >> so.txt 2> err && [ "$(stat -c %i so.txt)" = "$ino" ] &&
  [ "$(grep -c '^epoch,train_loss' so.txt)" -eq 2 ] && ok || bad "--log /dev/fd/1: $(cat err)"

# ---- read-only and modes ----
cp m0.ckpt ro.ckpt && chmod 0444 ro.ckpt
train --save ro.ckpt > out 2> err; rc=$?
[ $rc -eq 1 ] && grep -q "^error: ro.ckpt: cannot write: it is read-only (mode 0444); make it writable or remove it first to replace it$" err &&
  cmp -s ro.ckpt m0.ckpt && [ "$(stat -c %a ro.ckpt)" = 444 ] && ok || bad "read-only target: exit $rc: $(cat err)"
cp m0.ckpt g.ckpt && chmod 0640 g.ckpt
train --epochs 2 --save g.ckpt > /dev/null 2> err && ! cmp -s g.ckpt m0.ckpt && [ "$(stat -c %a g.ckpt)" = 640 ] && ok ||
  bad "mode kept: $(stat -c %a g.ckpt) $(cat err)"
if [ "$(id -u)" -eq 0 ] && command -v setpriv > /dev/null; then
  # another user, in a folder they may write, given root's 0644 file
  mkdir -p shared && chmod 0777 shared && cp m0.ckpt shared/root.ckpt && chmod 0644 shared/root.ckpt && chmod 0755 "$t"
  setpriv --reuid=65534 --regid=65534 --clear-groups "$tool" train m.flux --data csv:train.csv --epochs 1 --quiet \
    --save shared/root.ckpt > out 2> err; rc=$?
  [ $rc -eq 1 ] && grep -q "^error: shared/root.ckpt: cannot write: this user (uid 65534) may not write it (mode 0644, owner uid 0)$" err &&
    cmp -s shared/root.ckpt m0.ckpt && ok || bad "another user's file: exit $rc: $(cat err)"
fi

# ---- 5. one writer per checkpoint; what a killed run left is cleaned up ----
# a run long enough to be caught in the middle: it holds --save's lock until it ends
awk 'BEGIN { srand(11); for (i = 0; i < 20000; i++) printf "%d,%.3f,%.3f,%.3f,%.3f\n", i % 3, rand(), rand(), rand(), rand() }' > big.csv
"$tool" train m.flux --data csv:big.csv --epochs 1000 --batch 8 --save same.ckpt --quiet > first.out 2>&1 &
first=$!
n=0; while [ ! -s same.ckpt.lock ] && [ $n -lt 300 ]; do sleep 0.1; n=$((n + 1)); done
"$tool" train m.flux --data csv:train.csv --epochs 1 --save same.ckpt > out 2> err; rc=$?
kill -TERM $first 2> /dev/null; wait $first
[ $rc -eq 1 ] && grep -q "^error: same.ckpt: another cflux (process $first) is writing it; wait for it to end, or write elsewhere$" err &&
  ok || bad "second writer: exit $rc: $(cat err)"
[ ! -e same.ckpt.lock ] && ok || bad "the lock file stays after the run: $(ls)"
train --save same.ckpt > /dev/null 2> err && ok || bad "after the first run ended: $(cat err)"
# a temporary a kill -9 left (a process id that cannot be running) is removed; the
# lock file a kill -9 left holds nothing
echo half > same.ckpt.tmp.99999999.0
echo 99999999 > same.ckpt.lock
train --save same.ckpt > /dev/null 2> err && [ ! -e same.ckpt.tmp.99999999.0 ] && ok || bad "stale temporary: $(ls) $(cat err)"

echo "outputs: $pass passed, $fail failed"
[ $fail -eq 0 ]
