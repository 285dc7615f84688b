#!/bin/sh
# pyenv.sh [DIR] - the Python environment of the benchmark's peers (make bench):
# a virtual environment with PyTorch 2, MXNet 1.9.1 (with numpy<1.24, as MXNet 1.9.1
# still uses numpy names that 1.24 removed), onnxruntime and onnx (which
# onnxruntime.quantization needs for the int8 cases), all from PyPI. Made once
# and reused; prints the path of its python on standard output, everything else on
# standard error. Python is for tools around cflux only.
#
# DIR defaults to $CFLUX_BENCH_VENV, else ${XDG_CACHE_HOME:-$HOME/.cache}/cflux/bench-venv.
#
# Which PyTorch: the CPU-only build from PyTorch's own index when that index answers
# within 10 s (a ~200 MB wheel with the same CPU kernels); else PyPI's plain `torch`,
# the CUDA build, which pulls ~5 GB of NVIDIA libraries that stay unused here but runs
# the same CPU code (MKL, oneDNN). Both are PyTorch 2; the results record which one.
#
# One environment holds all three: torch requires no numpy, onnxruntime accepts
# numpy 1.23, and each peer runs in its own process (bench/peers.py imports only
# the one it measures), so their bundled OpenMP and BLAS libraries never meet.
set -eu
dir=${1:-${CFLUX_BENCH_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/cflux/bench-venv}}
check='import torch, mxnet, onnxruntime, onnx, numpy'
if [ -x "$dir/bin/python3" ] && "$dir/bin/python3" -c "$check" 2> /dev/null; then
  echo "$dir/bin/python3"
  exit 0
fi
py=python3
/usr/bin/python3 -c 'import venv, ensurepip' 2> /dev/null && py=/usr/bin/python3
echo "pyenv: making $dir (PyTorch, MXNet 1.9.1, onnxruntime, onnx; a few GB, once)" >&2
mkdir -p "$(dirname "$dir")"
if ! "$py" -m venv "$dir" >&2; then
  echo "pyenv: '$py -m venv' failed; install Debian's python3-venv (apt-get install python3-venv)" >&2
  exit 1
fi
pip() { "$dir/bin/pip" --disable-pip-version-check "$@" >&2; }
cpu_index=https://download.pytorch.org/whl/cpu
if "$dir/bin/python3" -c "import urllib.request as u; u.urlopen('$cpu_index/torch/', timeout=10)" 2> /dev/null; then
  echo "pyenv: PyTorch's CPU-only index answers: installing its torch" >&2
  pip install --quiet --index-url "$cpu_index" torch || { echo "pyenv: pip could not install torch from $cpu_index" >&2; exit 1; }
else
  echo "pyenv: PyTorch's CPU-only index does not answer: installing PyPI's torch (the CUDA build)" >&2
fi
pip install --quiet torch onnxruntime onnx "mxnet==1.9.1" "numpy<1.24" \
  || { echo "pyenv: pip could not install torch, onnxruntime, onnx, mxnet==1.9.1 and numpy<1.24 into $dir" >&2; exit 1; }
"$dir/bin/python3" -c "$check" >&2 || { echo "pyenv: $dir cannot import them" >&2; exit 1; }
"$dir/bin/python3" -c 'import torch, mxnet, onnxruntime, onnx, numpy as n
print("pyenv: torch %s, mxnet %s, onnxruntime %s, onnx %s, numpy %s" % (torch.__version__, mxnet.__version__, onnxruntime.__version__, onnx.__version__, n.__version__))' >&2
echo "$dir/bin/python3"
