#!/bin/sh
# pyenv.sh DIR - the Python that cflux's tests use (Python is for tools around cflux
# only): a virtual environment in DIR with safetensors and numpy from PyPI. Made once;
# a failure is reported and fails, it is never skipped.
set -eu
dir=${1:-build-venv}
if [ -x "$dir/bin/python3" ] && "$dir/bin/python3" -c 'import safetensors, numpy' 2> /dev/null; then exit 0; fi
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
echo "pyenv: making $dir with safetensors and numpy"
if ! "$py" -m venv "$dir"; then
  echo "pyenv: '$py -m venv' failed; install Debian's python3-venv (apt-get install python3-venv)" >&2
  exit 1
fi
if ! "$dir/bin/pip" install --quiet --disable-pip-version-check safetensors numpy; then
  echo "pyenv: pip could not install safetensors and numpy into $dir" >&2
  exit 1
fi
"$dir/bin/python3" -c 'import safetensors, numpy' || { echo "pyenv: $dir cannot import them" >&2; exit 1; }
