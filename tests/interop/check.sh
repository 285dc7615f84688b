#!/bin/sh
# check.sh BUILD SRC PYTHON - the interoperability tests against PyTorch and
# onnxruntime themselves: every model of tests/interop from PyTorch into cflux and
# back (torch_check.py), then out to ONNX, checked and run by onnxruntime at two
# batch sizes (onnx_check.py). Needs a Python with torch, onnx, onnxruntime,
# safetensors and numpy (`make interop-deps` makes build-venv-interop; .ci/run does);
# without one it says so and exits 77, which ctest reports as skipped.
set -u
build=$1 src=$2 py=$3
if ! [ -x "$py" ] || ! "$py" -c 'import torch, onnx, onnxruntime, safetensors, numpy' 2> /dev/null; then
  echo "interop: SKIPPED: $py cannot import torch, onnx, onnxruntime, safetensors and numpy;"
  echo "  'make interop-deps' installs them from PyPI into build-venv-interop (about 3 minutes and 5.5 GB)"
  exit 77
fi
work=$(mktemp -d /tmp/cflux-interop-XXXXXX)
trap 'rm -rf "$work"' EXIT
fail=0
"$py" "$src/tests/interop/torch_check.py" "$build" "$work" || fail=1
for case in mlp cnn lstm char-lstm char-gru char-rnn transformer-mlp; do
  model=$src/tests/interop/$case.flux
  if [ ! -f "$work/$case.params" ]; then
    echo "FAIL $case: onnx: no parameters (the PyTorch import failed)"
    fail=1
    continue
  fi
  if ! "$build/cflux" export "$model" --params "$work/$case.params" --onnx "$work/$case.onnx" > /dev/null; then
    echo "FAIL $case: cflux export --onnx failed"
    fail=1
    continue
  fi
  "$py" "$src/tests/interop/onnx_check.py" "$build" "$model" "$work/$case.params" "$work/$case.onnx" || fail=1
done
# a model that standardises its inputs (train --normalize): the ONNX graph does it too
awk 'BEGIN { srand(11); for (i = 0; i < 200; i++) { s = i % 5; for (j = 0; j < 20; j++) s = s "," (j * 10 + rand() * (i % 5 + 1)); print s } }' > "$work/norm.csv"
if "$build/cflux" train "$src/tests/interop/mlp.flux" --data "csv:$work/norm.csv" --normalize --epochs 2 --quiet \
     --save "$work/norm.ckpt" > /dev/null &&
   "$build/cflux" export "$src/tests/interop/mlp.flux" --params "$work/norm.ckpt" --onnx "$work/norm.onnx" > /dev/null; then
  "$py" "$src/tests/interop/onnx_check.py" "$build" "$src/tests/interop/mlp.flux" "$work/norm.ckpt" "$work/norm.onnx" || fail=1
else
  echo "FAIL normalised mlp: training or export failed"
  fail=1
fi
# a GPT: transposes, batched products and the causal mask (an Add of -inf above the
# diagonal before Softmax); trained an epoch here, as no PyTorch module is imported for it
if "$build/cflux" train "$src/tests/interop/gpt.flux" --data text:/usr/share/common-licenses/GPL-3 --epochs 1 --quiet \
     --save "$work/gpt.ckpt" > /dev/null &&
   "$build/cflux" export "$src/tests/interop/gpt.flux" --params "$work/gpt.ckpt" --onnx "$work/gpt.onnx" > /dev/null; then
  "$py" "$src/tests/interop/onnx_check.py" "$build" "$src/tests/interop/gpt.flux" "$work/gpt.ckpt" "$work/gpt.onnx" || fail=1
else
  echo "FAIL gpt: training or export failed"
  fail=1
fi
if [ $fail = 0 ]; then echo "interop: 1 passed, 0 failed"; else echo "interop: 0 passed, 1 failed"; fi
exit $fail
