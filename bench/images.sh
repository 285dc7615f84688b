#!/bin/sh
# images.sh [ROUNDS] - training from an image folder against the same data from IDX.
#
# Writes Fashion-MNIST (60,000 training and 10,000 test images) as grey PNGs in class
# folders under $CFLUX_BENCH_IMAGES (default /tmp/cflux-bench-images; once: kept for
# the next run), then times one epoch of `cflux train models/cnn.flux` at --threads 2
# (batch 64, the tool's defaults otherwise) from images:DIR/train,DIR/test and from
# fashion-mnist (the IDX files), interleaved, ROUNDS rounds (default 3), and prints
# the median wall time, the median samples/s the tool reports and the median peak
# RSS of each (GNU time's "Maximum resident set size"), then what one image costs to
# decode on one thread (bench_images decode). A benchmark, not a test.
#   CFLUX=path          the cflux binary (default build/cflux)
#   CFLUX_BENCH_BIN     bench_images (default build/bench_images)
#   CFLUX_BENCH_THREADS the --threads of the runs (default 2)
#   CFLUX_BENCH_EPOCHS  epochs of each run (default 1; the folder's images are kept
#                       decoded after its first, so more epochs show the run a user has)
set -eu
rounds=${1:-3}
here=$(cd "$(dirname "$0")/.." && pwd)
cflux=${CFLUX:-$here/build/cflux}
bin=${CFLUX_BENCH_BIN:-$here/build/bench_images}
dir=${CFLUX_BENCH_IMAGES:-/tmp/cflux-bench-images}
fm=${CFLUX_DATA:-/usr/share/datasets/fashion-mnist}
threads=${CFLUX_BENCH_THREADS:-2}
epochs=${CFLUX_BENCH_EPOCHS:-1}
[ -x "$cflux" ] && [ -x "$bin" ] || { echo "images.sh: build first (cmake --build build)" >&2; exit 1; }
if [ ! -f "$dir/done" ]; then
  rm -rf "$dir"
  mkdir -p "$dir"
  "$bin" write "$fm/train-images-idx3-ubyte.gz" "$fm/train-labels-idx1-ubyte.gz" "$dir/train"
  "$bin" write "$fm/t10k-images-idx3-ubyte.gz" "$fm/t10k-labels-idx1-ubyte.gz" "$dir/test"
  touch "$dir/done"
fi
lscpu | sed -n 's/^Model name: *//p'
out=$(mktemp -d /tmp/cflux-bench-images-run-XXXXXX)
trap 'rm -rf "$out"' EXIT
one() {  # one NAME SPEC: a line "NAME seconds samples/s peak-kB"
  /usr/bin/time -v "$cflux" train "$here/models/cnn.flux" --data "$2" --epochs "$epochs" --threads "$threads" > "$out/o" 2> "$out/e"
  secs=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): *//p' "$out/e" | awk -F: '{ print $(NF-1) * 60 + $NF }')
  sps=$(sed -n 's/^epoch .*, \([0-9]*\) samples\/s$/\1/p' "$out/o" | awk '{ s += $1 } END { printf "%d", s / NR }')
  kb=$(sed -n 's/.*Maximum resident set size (kbytes): *//p' "$out/e")
  echo "$1 $secs $sps $kb"
}
for r in $(seq "$rounds"); do
  if [ $((r % 2)) -eq 1 ]; then one folder "images:$dir/train,$dir/test"; one idx fashion-mnist
  else one idx fashion-mnist; one folder "images:$dir/train,$dir/test"; fi
done | tee "$out/all"
for k in idx folder; do
  grep "^$k " "$out/all" | awk -v k=$k '{ s[NR] = $2; p[NR] = $3; m[NR] = $4 }
    function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
      return a[int((n + 1) / 2)] }
    END { printf "%-6s median of %d: %.2f s, %d samples/s training, peak RSS %.0f MB\n", k, NR, med(s, NR), med(p, NR), med(m, NR) / 1024 }'
done
"$bin" decode "$dir/train" 1,28,28
