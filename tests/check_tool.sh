#!/bin/sh
# check_tool.sh CFLUX - the command-line tool's skeleton: help, version, exit codes.
set -u
tool=$1 pass=0 fail=0
expect() {  # expect CODE PATTERN ARGS...
  code=$1 pat=$2; shift 2
  out=$("$tool" "$@" 2>&1); rc=$?
  if [ "$rc" -eq "$code" ] && printf '%s' "$out" | grep -q -- "$pat"; then pass=$((pass + 1))
  else fail=$((fail + 1)); echo "cflux $*: exit $rc (want $code), output: $out"; fi
}
expect 0 'usage: cflux' --help
expect 0 'usage: cflux' help
expect 0 '^cflux [0-9]*\.[0-9]*\.[0-9]* (matrix products: ' --version
expect 2 "unknown command 'frobnicate'" frobnicate
expect 2 'usage: cflux'
echo "tool: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
