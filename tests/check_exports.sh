#!/bin/sh
# check_exports.sh LIB HEADER - every function that the public header declares with
# CF_API is exported by the shared library (the library builds with hidden
# visibility, so a definition that misses the declaration would silently vanish).
set -eu
lib=$1 header=$2
want=$(grep -oE 'CF_API[^(]*\b(cf_[a-z0-9_]+)\(' "$header" | grep -oE 'cf_[a-z0-9_]+\($' | tr -d '(' | sort -u)
have=$(nm -D --defined-only "$lib" | awk '{print $3}' | sort -u)
missing=$(printf '%s\n' "$want" | while read -r f; do printf '%s\n' "$have" | grep -qx "$f" || echo "$f"; done)
extra=$(printf '%s\n' "$have" | grep -v '^cf_' | grep -vE '^(_init|_fini|_edata|_end|__bss_start)$' || true)
n=$(printf '%s\n' "$want" | wc -l)
if [ -n "$missing" ]; then
  echo "not exported:" $missing
  echo "exports: 0 passed, 1 failed"
  exit 1
fi
[ -n "$extra" ] && echo "note: exported besides cf_*:" $extra
echo "exports: $n functions declared, all exported"
echo "exports: 1 passed, 0 failed"
