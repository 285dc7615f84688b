#!/bin/sh
# bootstrap.sh - make sure the Debian packages that cflux needs are installed.
#
#   tools/bootstrap.sh build   what building needs
#   tools/bootstrap.sh demo    the same, plus the Fashion-MNIST data set
#   tools/bootstrap.sh test    what every test needs: the data set, the fortunes
#                              corpus, clang with its libFuzzer runtime, Python's
#                              venv, Chromium (which opens the training report in a
#                              test) and Open MPI (the data-parallel tests)
#   tools/bootstrap.sh bench   the build's, plus the data set, the fortunes corpus
#                              (the character GPT's text), 7-Zip (its PPMd, a
#                              baseline for that text) and Python's venv
#   tools/bootstrap.sh python  the build's, plus Python's venv and headers (the
#                              Python module, pip install ./python)
#
# As root, a missing package is installed with apt-get; otherwise this prints the
# exact command to run and fails, changing nothing.
set -eu

need="cmake gcc make pkg-config libopenblas-dev libcjson-dev zlib1g-dev libpng-dev libjpeg62-turbo-dev"
case "${1:-build}" in
  demo) need="$need dataset-fashion-mnist" ;;
  bench) need="$need dataset-fashion-mnist fortunes 7zip python3-venv" ;;
  test) need="$need dataset-fashion-mnist fortunes clang libclang-rt-dev python3-venv python3-dev chromium libopenmpi-dev openmpi-bin" ;;
  python) need="$need python3-venv python3-dev" ;;
  build) ;;
  *) echo "usage: $0 [build|demo|test|bench|python]" >&2; exit 2 ;;
esac

missing=""
for p in $need; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
  echo "bootstrap: installing:$missing"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-install-recommends $missing
else
  echo "bootstrap: missing Debian packages:$missing" >&2
  echo "bootstrap: run:  sudo apt-get install -y$missing" >&2
  exit 1
fi
