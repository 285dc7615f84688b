#!/bin/sh
# check.sh BUILD SRC PYTHON - the interoperability tests against PyTorch and
# onnxruntime themselves: every model of tests/interop from PyTorch into cflux and
# back (torch_check.py), then out to ONNX, checked and run by onnxruntime at two
# batch sizes (onnx_check.py). Needs a Python with torch, onnx, onnxruntime,
# safetensors and numpy (`make test` makes build-venv-interop first, through `make
# interop-deps`); without one it fails, saying so.
set -u
build=$1 src=$2 py=$3
if ! [ -x "$py" ] || ! "$py" -c 'import torch, onnx, onnxruntime, safetensors, numpy' 2> /dev/null; then
  echo "interop: FAILED: $py cannot import torch, onnx, onnxruntime, safetensors and numpy;"
  echo "  'make interop-deps' (which make test runs first) installs them from PyPI into build-venv-interop"
  echo "  (about 3 minutes and 5.5 GB)"
  echo "interop: 0 passed, 1 failed"
  exit 1
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
# trained NAME MODEL DATA [TRAIN OPTIONS...]: train MODEL here, export it to ONNX and
# check it in onnxruntime, for models that no PyTorch module is imported for
trained() {
  name=$1 model=$src/tests/interop/$2 data=$3
  shift 3
  if "$build/cflux" train "$model" --data "$data" --epochs 1 --quiet --save "$work/$name.ckpt" "$@" > /dev/null &&
     "$build/cflux" export "$model" --params "$work/$name.ckpt" --onnx "$work/$name.onnx" > /dev/null; then
    "$py" "$src/tests/interop/onnx_check.py" "$build" "$model" "$work/$name.ckpt" "$work/$name.onnx" || fail=1
  else
    echo "FAIL $name: training or export failed"
    fail=1
  fi
}
# a model that standardises its inputs (train --normalize): the ONNX graph does it too
awk 'BEGIN { srand(11); for (i = 0; i < 200; i++) { s = i % 5; for (j = 0; j < 20; j++) s = s "," (j * 10 + rand() * (i % 5 + 1)); print s } }' > "$work/norm.csv"
trained norm mlp.flux "csv:$work/norm.csv" --normalize --epochs 2
# clamp: ONNX Clip with its bounds as constant inputs, -inf or +inf where one is left out
trained clamp clamp.flux "csv:$work/norm.csv"
# a GPT: transposes, batched products and the causal mask (an Add of -inf above the
# diagonal before Softmax)
trained gpt gpt.flux text:/usr/share/common-licenses/GPL-3
# residual blocks: convolutions without bias, batch normalisation, the shortcuts' Add
trained resnet resnet.flux fashion-mnist --limit-batches 5
# quantized models (cflux quantize, both ways of quantizing the inputs) in ONNX's QDQ
# form: onnxruntime gives cflux's int8 classes on Fashion-MNIST's test images
quantized() {
  name=$1 model=$2
  shift 2
  for mode in dynamic static; do
    if "$build/cflux" train "$model" --epochs 1 --quiet --save "$work/$name.ckpt" "$@" > /dev/null &&
       "$build/cflux" quantize "$model" --params "$work/$name.ckpt" --activations $mode \
         --save "$work/$name-$mode.params" > /dev/null &&
       "$build/cflux" export "$work/$name-$mode.params" --onnx "$work/$name-$mode.onnx" > /dev/null &&
       "$build/cflux" predict "$work/$name-$mode.params" "$images" --json > "$work/$name-$mode.json"; then
      "$py" "$src/tests/interop/quant_check.py" "$work/$name-$mode.onnx" "$work/$name-$mode.json" "$images" || fail=1
    else
      echo "FAIL $name ($mode): training, quantizing, exporting or predicting failed"
      fail=1
    fi
  done
}
images=/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz
quantized qmlp "$src/models/mlp.flux"
quantized qcnn "$src/models/cnn-bn.flux" --limit-batches 100
if [ $fail = 0 ]; then echo "interop: 1 passed, 0 failed"; else echo "interop: 0 passed, 1 failed"; fi
exit $fail
