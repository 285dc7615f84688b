#!/bin/sh
# pyenv.sh DIR [interop|python] - the Python that cflux's tests use: a virtual
# environment in DIR with safetensors and numpy from PyPI; with `python`, numpy and
# pytest (for the Python module's tests); with `interop`, also PyTorch, onnx and onnxruntime, for the interoperability
# tests (PyPI's torch wheel pulls in its CUDA libraries: about 5.5 GB and 3 minutes).
# Made once; pip keeps no cache outside DIR. A failure is reported and fails, it is
# never skipped.
set -eu
dir=${1:-build-venv}
if [ "${2:-}" = interop ]; then
  # pinned: docs/interop.md shows what this PyTorch prints, and make test compares
  packages="torch==2.15.0 onnx==1.23.2 onnxruntime==1.32.0 safetensors==0.8.0 numpy==2.4.6"
  modules="torch, onnx, onnxruntime, safetensors, numpy"
elif [ "${2:-}" = python ]; then   # the Python module's tests (make test-python installs the module)
  packages="numpy pytest"
  modules="numpy, pytest"
else
  packages="safetensors numpy"
  modules="safetensors, numpy"
fi
if [ -x "$dir/bin/python3" ] && "$dir/bin/python3" -c "import $modules" 2> /dev/null; then exit 0; fi
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
echo "pyenv: making $dir with $modules"
if ! "$py" -m venv "$dir"; then
  echo "pyenv: '$py -m venv' failed; install Debian's python3-venv (apt-get install python3-venv)" >&2
  exit 1
fi
# shellcheck disable=SC2086
if ! PIP_NO_CACHE_DIR=1 "$dir/bin/pip" install --quiet --disable-pip-version-check $packages; then
  echo "pyenv: pip could not install $packages into $dir" >&2
  exit 1
fi
"$dir/bin/python3" -c "import $modules" || { echo "pyenv: $dir cannot import $modules" >&2; exit 1; }
