#!/bin/sh
# check_layers.sh SRC [NM OBJECT...] - the layers of the code include and call
# downwards only.
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
#
# Given nm and the library's objects, it reads what they link instead: no object of a
# layer references a symbol defined in another layer that the rules above do not let
# it include (a file named there, such as ops/op.h, allows the symbols that file
# declares). That sees what the includes cannot: a call through cflux.h, which every
# layer may include, to a function a higher layer defines.
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
[ $# -gt 1 ] || exit $bad

nm=$2
shift 2
work=$(mktemp -d /tmp/cflux-layers-XXXXXX)
trap 'rm -rf "$work"' EXIT
# the rules, one layer a line, and the words of each file a rule names
for layer in $(ls src); do
  echo "R $layer $(allowed "$layer")"
  for a in $(allowed "$layer"); do
    case $a in */*) grep -o '[A-Za-z_][A-Za-z0-9_]*' "src/$a" | sed "s|^|W $a |" ;; esac
  done
done >"$work/rules"
# an object's path ends in src/LAYER/FILE.c.o; the embedded standard library is the notation's
"$nm" -A -P "$@" >"$work/syms"
awk '
function place(p) {
  sub(/:$/, "", p)
  if (p ~ /stdlib_gen\.c\.o$/) return "lang/stdlib_gen.c"
  if (match(p, /src\/[a-z]+\/[^\/]+\.c\.o$/)) return substr(p, RSTART + 4, RLENGTH - 6)
  return ""
}
FNR == NR {
  if ($1 == "R") { ok[$2] = 1; for (i = 3; i <= NF; i++) rule[$2] = rule[$2] " " $i }
  else word[$2, $3] = 1
  next
}
{
  f = place($1)
  if (f == "") { print "check_layers: " $1 " is no object of src/LAYER"; bad = 1; next }
  if ($3 == "U") { nref++; ref[nref] = f; refsym[nref] = $2 }
  else if ($3 ~ /^[A-TV-Z]$/) def[$2] = f
}
END {
  for (r = 1; r <= nref; r++) {
    s = refsym[r]
    if (!(s in def)) continue                 # the C library, cJSON, zlib, ...
    f = ref[r]; d = def[s]
    split(f, a, "/"); split(d, b, "/")
    if (a[1] == b[1]) continue
    if (!(a[1] in ok)) { print "check_layers: src/" f ": layer " a[1] " has no rule here"; bad = 1; continue }
    n = split(rule[a[1]], allowed, " "); pass = 0
    for (i = 1; i <= n; i++)
      if (allowed[i] == b[1] || (index(allowed[i], b[1] "/") == 1 && (allowed[i], s) in word)) pass = 1
    if (!pass) {
      print "check_layers: src/" f " references " s ", defined in src/" d ": " a[1] " may use only:" rule[a[1]]
      bad = 1
    }
    across++
  }
  if (across < 100) { print "check_layers: only " across " references across layers; not the library objects?"; exit 1 }
  if (!bad) print "check_layers: " across " references across layers in the objects, all downwards"
  exit bad
}' "$work/rules" "$work/syms" || bad=1
exit $bad
