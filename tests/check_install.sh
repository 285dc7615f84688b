#!/bin/sh
# check_install.sh BUILD_DIR SOURCE_DIR - install into a temporary prefix, then build
# and run the example the way the README says: against the installed library, found
# through pkg-config.
set -eu
build=$1 src=$2
prefix=$(mktemp -d /tmp/cflux-install-XXXXXX)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
PKG_CONFIG_PATH="$prefix/lib/pkgconfig:${PKG_CONFIG_PATH:-}"
export PKG_CONFIG_PATH
cc "$src/examples/train_mlp.c" $(pkg-config --cflags --libs cflux) -lm -o "$prefix/train_mlp"
out=$(LD_LIBRARY_PATH="$prefix/lib" "$prefix/train_mlp")
echo "$out" | tail -n 1
if echo "$out" | grep -q '^accuracy 0\.9'; then
  echo "install: 1 passed, 0 failed"
else
  echo "install: the example built against the installed library did not train"
  echo "install: 0 passed, 1 failed"
  exit 1
fi
