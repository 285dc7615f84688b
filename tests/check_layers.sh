#!/bin/sh
# check_layers.sh SRC - the layers of the code include downwards only.
#
#   rt     the runtime (pool, CPU detection, GEMM kernels): rt and core
#   ops    the kernels: ops, rt, core             (never the executor or training)
#   exec   binding and running: exec, ops, rt, core
#   lang   the notation: lang, ops (shape rules), core   (never runs kernels)
#   data   readers: data, rt, core
#   train  training: train, exec, data, rt, core
#   interop  PyTorch and ONNX files: interop, lang, exec, ops, rt, core
#   core   the graph and what everything shares: core, and the op table (ops/op.h)
#          that gives every node its shape rule
#   tools  the command-line tool: the public header and its own files only
# Prints each include that breaks a rule and fails if there is one.
set -eu
root=${1:-.}
cd "$root"
allowed() {
  case $1 in
    rt) echo "rt core" ;;
    ops) echo "ops rt core" ;;
    exec) echo "exec ops rt core" ;;
    lang) echo "lang ops core" ;;
    data) echo "data rt core" ;;
    train) echo "train exec data rt core" ;;
    interop) echo "interop lang exec ops rt core" ;;
    core) echo "core ops/op.h" ;;
    *) echo "" ;;
  esac
}
bad=0
checked=0
for f in src/*/*.c src/*/*.h; do
  layer=${f#src/}
  layer=${layer%%/*}
  ok=$(allowed "$layer")
  [ -n "$ok" ] || { echo "check_layers: $f: layer '$layer' has no rule here"; bad=1; continue; }
  for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
    checked=$((checked + 1))
    [ "$inc" = cflux.h ] && continue
    dir=${inc%%/*}
    [ "$dir" = "$inc" ] && continue       # same-folder include, no folder named
    pass=0
    for a in $ok; do
      [ "$a" = "$dir" ] || [ "$a" = "$inc" ] && pass=1
    done
    [ $pass = 1 ] || { echo "check_layers: $f includes \"$inc\": $layer may include only: $ok"; bad=1; }
  done
done
for f in tools/*.c tools/*.h; do
  for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
    checked=$((checked + 1))
    case $inc in */*) echo "check_layers: $f includes \"$inc\": the tool uses the public header only"; bad=1 ;; esac
  done
done
[ "$checked" -gt 100 ] || { echo "check_layers: only $checked includes found under $root; wrong folder?"; exit 1; }
[ $bad = 0 ] && echo "check_layers: $checked includes, all downwards"
exit $bad
