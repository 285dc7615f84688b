#!/bin/sh
# check_report.sh CFLUX SOURCE_DIR [browser] - `cflux train --report`: the page of a
# short Fashion-MNIST run holds every section, the worst-classified images as PNG
# data (decoded here), and nothing that runs or is fetched. With `browser`, headless
# Chromium (Debian's chromium) opens it: no message in the console, and a screenshot;
# without Chromium that part fails, saying so (make test installs it).
set -u
tool=$1 src=$2 mode=${3:-page} pass=0 fail=0
t=$(mktemp -d /tmp/cflux-report-XXXXXX)
trap 'rm -rf "$t"' EXIT
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "report: $*"; }
if [ "$mode" = browser ] && ! command -v chromium > /dev/null; then
  echo "report_browser: FAILED: chromium is not installed (apt-get install chromium; make test installs it as root)"
  echo "report_browser: 0 passed, 1 failed"
  exit 1
fi
printf 'top\ntrousers\npullover\ndress\ncoat\nsandal\nshirt\nsneaker\nbag\nboot\n' > "$t/names.txt"
"$tool" train "$src/models/mlp.flux" --epochs 2 --val 0.1 --patience 5 --keep-best "$t/best.ckpt" \
  --classes "$t/names.txt" --report "$t/r.html" > "$t/out" 2>&1 || { bad "training failed: $(cat "$t/out")"; exit 1; }
page=$t/r.html
grep -q "^report: $t/r.html" "$t/out" && ok || bad "the run does not name its report"
head -n 1 "$page" | grep -q '^<!DOCTYPE html>' && ok || bad "not an HTML5 page"
for s in Command Settings Model 'Loss and accuracy' 'Learning rate' 'Test set: confusion matrix' 'Per class' \
         'Worst-classified test images'; do
  grep -q "<h2>$s</h2>" "$page" && ok || bad "no section '$s'"
done
grep -q 'Finished: 2 epochs\.' "$page" && ok || bad "the status is not the finished run's"
grep -q 'http-equiv="refresh"' "$page" && bad "the finished page still reloads" || ok
grep -qi '<script' "$page" && bad "the page has a script" || ok
grep -Eqi '(src|href)="(https?:)?//|url\(' "$page" && bad "the page fetches something" || ok
[ "$(grep -o '<img ' "$page" | wc -l)" -eq 16 ] && ok || bad "not 16 test images"
[ "$(grep -o 'src="data:image/png;base64,' "$page" | wc -l)" -eq 16 ] && ok || bad "images not inline PNG data"
grep -q '9 boot</th>' "$page" && grep -q 'predicted: ' "$page" && ok || bad "the class names of --classes are not used"
grep -q 'Accuracy 0\.[0-9]* on 10000 samples' "$page" && ok || bad "no test accuracy over the 10000 test samples"
grep -q '<svg' "$page" && grep -q 'polyline' "$page" && ok || bad "no curves"
grep -q 'Layer .*Output .*Params' "$page" && ok || bad "no model summary"
# the first image decodes as a 28x28 grey PNG
python3 - "$page" << 'PY' && ok || bad "the first image is not a 28x28 grey PNG"
import base64, re, struct, sys, zlib
html = open(sys.argv[1]).read()
png = base64.b64decode(re.search(r'src="data:image/png;base64,([^"]*)"', html).group(1))
assert png[:8] == b"\x89PNG\r\n\x1a\n"
w, h, depth, colour = struct.unpack(">IIBB", png[16:26])
assert (w, h, depth, colour) == (28, 28, 8, 0), (w, h, depth, colour)
PY
if [ "$mode" = browser ]; then
  # no script runs on the page, so any console message is a fault (a script, a bad URL)
  timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --enable-logging=stderr --v=0 \
    --window-size=1100,2600 --screenshot="$t/shot.png" "file://$page" > "$t/chromium.log" 2>&1
  grep -q 'bytes written to file' "$t/chromium.log" && [ -s "$t/shot.png" ] && ok || bad "no screenshot: $(tail -n 5 "$t/chromium.log")"
  grep ':CONSOLE' "$t/chromium.log" && bad "messages in the console" || ok
  [ -n "${CFLUX_REPORT_SHOT:-}" ] && cp "$t/shot.png" "$CFLUX_REPORT_SHOT"
  echo "report_browser: $pass passed, $fail failed"
else
  echo "report: $pass passed, $fail failed"
fi
[ "$fail" -eq 0 ]
