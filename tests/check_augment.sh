#!/bin/sh
# check_augment.sh CFLUX PYTHON - --augment through the tool, on IDX images made here:
# a model file's "# train:" line supplies it and the header shows it, --augment none
# turns it off (other weights), a run stopped with --stop-after and resumed ends with
# the straight run's tensors bit for bit, so do runs at 1 and 2 threads, and eval of
# the result gives the run's own test loss (evaluation is never augmented). PYTHON has
# numpy and safetensors, to write the IDX files and compare checkpoints.
set -u
tool=$1 py=$2 name=augment
. "$(dirname "$0")/train_setup.sh"

# 1 x 8 x 8 images: a bright row (class 0), column (1) or square (2) at a random place
"$py" - "$t" <<'EOF' || { echo "FAILED: cannot write the IDX files with $py"; exit 1; }
import sys, numpy as np
rng = np.random.default_rng(4)
def write(path, a):
    dims = a.shape
    with open(path, "wb") as f:
        f.write(bytes([0, 0, 8, len(dims)]) + b"".join(int(d).to_bytes(4, "big") for d in dims) + a.tobytes())
for part, n in (("train", 240), ("test", 60)):
    x = np.zeros((n, 8, 8), np.uint8); y = np.arange(n, dtype=np.uint8) % 3
    for i in range(n):
        at, v = rng.integers(1, 7), rng.integers(128, 256)
        if y[i] == 0: x[i, at, :] = v
        elif y[i] == 1: x[i, :, at] = v
        else: x[i, at - 1:at + 2, at - 1:at + 2] = v
    write(f"{sys.argv[1]}/{part}-x.idx", x); write(f"{sys.argv[1]}/{part}-y.idx", y)
EOF
data="idx:$t/train-x.idx,$t/train-y.idx,$t/test-x.idx,$t/test-y.idx"
cat > "$t/a.flux" <<'EOF'
# train: --augment crop:2,flip,erase --batch 16 --epochs 2
model = Chain(Input(1, 8, 8), Conv2D(4, 3, pad = 1), BatchNorm(), relu, MaxPool(2), flatten, Affine(3), softmax)
EOF
# the same tensors in two checkpoints (every parameter, state and optimizer tensor)
same() {
  "$py" -c "
import sys
from safetensors.numpy import load_file
a, b = load_file(sys.argv[1]), load_file(sys.argv[2])
sys.exit(0 if a.keys() == b.keys() and all((a[k] == b[k]).all() for k in a) else 1)" "$1" "$2"
}
run() { "$tool" train "$t/a.flux" --data "$data" "$@"; }

run --threads 2 --save "$t/s.ckpt" --json > "$t/s.json" 2> "$t/s.out"; rc=$?
[ $rc -eq 0 ] && ok || bad "train: exit $rc: $(cat "$t/s.out")"
grep -q "settings from .*a.flux: --augment crop:2,flip,erase" "$t/s.out" && ok || bad "the # train: line is not said"
grep -q "batch 16, augment crop:2,flip,erase, 2 threads" "$t/s.out" && ok || bad "the header does not show the augmentation"

# --augment none wins over the model's line: no augmentation, other weights
run --threads 2 --augment none --save "$t/n.ckpt" > "$t/n.out" 2>&1; rc=$?
[ $rc -eq 0 ] && grep -q "batch 16, 2 threads" "$t/n.out" && ok || bad "--augment none: exit $rc: $(cat "$t/n.out")"
[ $rc -eq 0 ] && ! same "$t/s.ckpt" "$t/n.ckpt" && ok || bad "the augmented run's weights are the plain run's"

# stopped after epoch 1 and resumed (at another thread count): the straight run's bits
run --threads 2 --stop-after 1 --save "$t/r.ckpt" --quiet > /dev/null 2>&1 &&
  run --threads 1 --resume "$t/r.ckpt" --save "$t/r.ckpt" --quiet > /dev/null 2>&1 &&
  same "$t/s.ckpt" "$t/r.ckpt" && ok || bad "stopped after epoch 1 and resumed: not the straight run's tensors"
run --threads 1 --save "$t/one.ckpt" --quiet > /dev/null 2>&1 && same "$t/s.ckpt" "$t/one.ckpt" && ok ||
  bad "1 and 2 threads: not the same tensors"

# eval scores the data as it is: the run's own test loss
"$tool" eval "$t/a.flux" --params "$t/s.ckpt" --data "$data" --json > "$t/e.json" 2> "$t/e.out"; rc=$?
loss() { sed -n 's/.*"test_loss": \([^,]*\),.*/\1/p' "$1"; }
eloss=$(sed -n 's/.*"loss": \([^,]*\),.*/\1/p' "$t/e.json")
[ $rc -eq 0 ] && [ -n "$eloss" ] && [ "$eloss" = "$(loss "$t/s.json")" ] && ok ||
  bad "eval's loss '$eloss' is not the run's test loss '$(loss "$t/s.json")': exit $rc $(cat "$t/e.out")"

# bad specs from the model's line or the command line: usage errors before any data is read
run --augment crop:8 > "$t/out" 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q "cflux train: --augment 'crop:8': crop:P pads P pixels on each side, a whole number from 1 to 7" "$t/out" &&
  ok || bad "--augment crop:8: exit $rc: $(cat "$t/out")"
sed 's/crop:2,flip,erase/crop:2,flop/' "$t/a.flux" > "$t/b.flux"
"$tool" train "$t/b.flux" --data "$data" > "$t/out" 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q "'flop' is not a transform" "$t/out" && ok || bad "# train: --augment crop:2,flop: exit $rc: $(cat "$t/out")"

echo "augment_tool: $pass passed, $fail failed"
[ $fail -eq 0 ]
