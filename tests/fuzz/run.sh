#!/bin/sh
# run.sh FUZZER CORPUS SECONDS - fuzz for a while from the committed corpus, writing
# new inputs to a temporary directory (the repository's corpus is only read).
# Prints "fuzz: 1 passed, 0 failed" when no crash, leak or timeout was found.
set -u
fuzzer=$1 corpus=$2 seconds=$3
work=$(mktemp -d /tmp/cflux-fuzz-XXXXXX)
trap 'rm -rf "$work"' EXIT
name=$(basename "$fuzzer")
# inputs as long as the cases that cost (a deflate bomb after a PNG's rows, a JPEG of
# many scans, a file of thousands of tensors) for the readers of files; short ones for
# the rest
case $name in
  fuzz_png | fuzz_jpeg | fuzz_safetensors | fuzz_torch) max_len=1048576 ;;
  *) max_len=4096 ;;
esac
if "$fuzzer" -max_len=$max_len -timeout=10 -rss_limit_mb=2048 -max_total_time="$seconds" \
     -artifact_prefix="$work/" "$work" "$corpus" >"$work/log" 2>&1; then
  runs=$(grep -o 'Done [0-9]* runs' "$work/log" | tail -n 1)
  echo "fuzz $name: ${runs:-done} in ${seconds} s, no crash"
  echo "fuzz: 1 passed, 0 failed"
else
  tail -n 40 "$work/log"
  for f in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*; do
    [ -f "$f" ] && { echo "input that failed ($f):"; od -c "$f" | head -20; }
  done
  echo "fuzz: 0 passed, 1 failed"
  exit 1
fi
