#!/bin/sh
# check_docs_selftest.sh BUILD - tests/check_docs.py itself: a page whose commands print
# what it shows passes, and each kind of difference fails it (a changed word, a number
# past the tolerance, a line too many, a wrong exit status, a failing ```sh command).
set -u
build=$1 pass=0 fail=0
here=$(cd "$(dirname "$0")" && pwd)
t=$(mktemp -d /tmp/cflux-docs-selftest-XXXXXX)
trap 'rm -rf "$t"' EXIT
page() { printf '%s\n' "$@" > "$t/page.md"; }
run() { python3 "$here/check_docs.py" "$build" "$t/page.md" > "$t/out" 2>&1; }
expect() {  # expect 0|1 WHAT: the checker's status on the page just written
  run; rc=$?
  if [ "$rc" -eq "$1" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAILED: $2 (status $rc)"; cat "$t/out"; fi
}
f='```'
page "$f" '$ printf "a 1.2345 b\nc\nd\ne\n"' 'a 1.2350 b' '...' 'e' "$f"
expect 0 "a gap and a number within 0.002"
page "$f" '$ printf "a 1.2345 b\n"' 'a 1.2400 b' "$f"
expect 1 "a number 0.0055 away"
page "$f" '$ echo hello world' 'hello word' "$f"
expect 1 "a changed word"
page "$f" '$ printf "x\ny\n"' 'x' "$f"
expect 1 "a line the page does not show"
page "$f" '$ echo "error: no"; exit 1' 'error: no' "$f"
expect 0 "an error line and status 1"
page "$f" '$ echo "error: no"' 'error: no' "$f"
expect 1 "an error line with status 0"
page "${f}sh" 'true' 'false' "$f"
expect 1 "a failing sh command"
page "$f" '$ echo "epoch 1 | 0.3 s, 9999 samples/s"' 'epoch 1 | 12.0 s, 1 samples/s' "$f"
expect 0 "timings are not compared"
page '<!-- check: vary cpu: .* -->' "$f" '$ echo "cpu: Zen"' 'cpu: Xeon' "$f"
expect 0 "what vary names is not compared"
page "${f}sh" 'echo "x 1"' "$f" '<!-- check: output echo -->' "$f" 'x 2' "$f"
expect 1 "an output block that differs"
page '<!-- check: long -->' "$f" '$ echo one; sleep 30; echo two' 'one' 'three' "$f"
python3 "$here/check_docs.py" "$build" --cap 2 "$t/page.md" > "$t/out" 2>&1 && pass=$((pass + 1)) ||
  { fail=$((fail + 1)); echo "FAILED: a long run stopped and compared as a prefix"; cat "$t/out"; }
echo "docs checker: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
