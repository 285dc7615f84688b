#!/bin/sh
# check_compat.sh CFLUX SRC - a checkpoint an earlier cflux wrote still resumes, to the
# figures that build printed (tests/compat/make.sh says how it was made).
set -eu
cflux=$1
src=$2
tmp=$(mktemp -d /tmp/cflux-compat-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cp "$src/tests/compat/tiny-lstm.ckpt" "$tmp/run.ckpt"
out=$(cd "$src/tests/compat" && "$cflux" train tiny-lstm.flux --data text:/usr/share/common-licenses/GPL-3 \
  --epochs 2 --limit-batches 2 --resume "$tmp/run.ckpt" --quiet 2>&1) || {
  echo "check_compat: resuming tests/compat/tiny-lstm.ckpt failed: $out"
  exit 1
}
case $out in
  *"test loss 4.3244 nats/char, accuracy 0.0391"*) echo "compat: 1 passed, 0 failed" ;;
  *) echo "check_compat: resumed, but not to the figures of the build that wrote it: $out"; exit 1 ;;
esac
