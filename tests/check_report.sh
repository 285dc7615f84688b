#!/bin/sh
# check_report.sh CFLUX SOURCE_DIR [browser] - `cflux train --report`: the page of a
# short Fashion-MNIST run holds every section, the worst-classified images as PNG
# data (decoded here), and nothing that runs or is fetched. The page of a regression
# run (docs/training.md's house prices) has no accuracy but R² and MAE, its last
# epoch's matching those computed here from `cflux predict`, and a log loss axis; an
# R² far below 0 is drawn at -1. On all, the curves' ticks are round numbers,
# labelled compactly, apart. With
# `browser`, headless Chromium (Debian's chromium) opens the first: no message in the
# console, and a screenshot; without Chromium that part fails, saying so (make test
# installs it).
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
# The curves (the page's first <svg>) on stdout, for ticks.py
curves() { sed -n '/<svg/,/<\/svg>/p' "$1" | sed '/<\/svg>/q'; }
# ticks.py: each axis's tick labels are 1, 2 or 5 x 10^k (a log axis) or multiples of
# such a step (linear), at most 7 characters without an exponent's '+' or leading
# zero, at least 14 px apart (the font is 11 px), clear of the axis titles; prints
# which axes it found ("loss:log", "right:linear") and fails saying what is wrong
cat > "$t/ticks.py" << 'PY'
import math, re, sys
svg = sys.stdin.read()
texts = [(float(m.group(1)), float(m.group(2)), m.group(3), m.group(4), m.group(5)) for m in re.finditer(
    r'<text x="([-0-9.]+)" y="([-0-9.]+)" font-size="(\d+)"(?: text-anchor="(\w+)")?>([^<]*)</text>', svg)]
def nice(v):   # 1, 2 or 5 x 10^k
    m = abs(v) / 10 ** math.floor(math.log10(abs(v)))
    return any(abs(m - c) < 1e-6 for c in (1, 2, 5, 10))
def check(name, ticks, log, key, gap, width):
    assert len(ticks) >= 2, f"{name}: {len(ticks)} ticks"
    for _, _, s in ticks:
        assert len(s) <= 7 and 'e+' not in s and 'e-0' not in s, f"{name}: label {s!r} is not compact"
    v = [float(s) for _, _, s in ticks]
    if log:
        assert all(x > 0 and nice(x) for x in v), f"{name}: log ticks {v} are not 1, 2, 5 x 10^k"
    else:
        d = sorted(v)
        step = d[1] - d[0]
        assert nice(step), f"{name}: step {step} of {v} is not 1, 2, 5 x 10^k"
        assert all(abs(b - a - step) < 1e-6 * step for a, b in zip(d, d[1:])), f"{name}: ticks {v} unevenly spaced"
        assert all(abs(x / step - round(x / step)) < 1e-6 for x in v), f"{name}: ticks {v} are not multiples of {step}"
    pos = sorted(key(p) for p in ticks)
    assert all(b - a >= gap for a, b in zip(pos, pos[1:])), f"{name}: labels {[s for *_, s in ticks]} at {pos} overlap"
    for x, _, s in ticks:   # a digit is about 6.1 px wide at 11 px
        assert width(x, len(s) * 6.5), f"{name}: label {s!r} runs into the axis title"
left = [(x, y, s) for x, y, size, a, s in texts if size == "11" and a == "end"]
right = [(x, y, s) for x, y, size, a, s in texts if size == "11" and a == "start"]
below = [(x, y, s) for x, y, size, a, s in texts if size == "11" and a == "middle"]
log = "loss (log scale)" in svg
check("loss axis", left, log, lambda p: p[1], 14, lambda x, w: x - w >= 24)
print("loss:" + ("log" if log else "linear"))
if right:
    check("right axis", right, False, lambda p: p[1], 14, lambda x, w: x + w <= 652)
    print("right:linear")
check("epoch axis", [(x, y, s) for x, y, s in below], False, lambda p: p[0], 1, lambda x, w: True)
xs = sorted((x, len(s)) for x, _, s in below)
assert all(b[0] - a[0] >= (a[1] + b[1]) / 2 * 6.5 + 2 for a, b in zip(xs, xs[1:])), f"epoch labels overlap: {xs}"
PY
found=$(curves "$page" | python3 "$t/ticks.py" 2>&1) && ok || bad "the classifier's curves: $found"
echo "$found" | grep -q 'right:linear' && ok || bad "the classifier's curves have no accuracy axis: $found"
curves "$page" | grep -q '>accuracy</text>' && ok || bad "no accuracy axis title on the classifier's curves"

# Regression: docs/training.md's house prices, --normalize, 120 epochs (under a second; enough
# that not every epoch's number fits under the curves)
awk 'BEGIN { srand(1); print "area,rooms,age,distance,price";
  for (i = 0; i < 1200; i++) { a = 40 + int(160 * rand()); r = 1 + int(a / 35 + 2 * rand()); g = int(90 * rand()); d = 30 * rand();
    printf "%d,%d,%d,%.1f,%d\n", a, r, g, d, 900 * a + 8000 * r - 600 * g - 2500 * d + 60000 + 15000 * (rand() - 0.5) } }' > "$t/all.csv"
head -n 1001 "$t/all.csv" > "$t/houses.csv"
{ head -n 1 "$t/all.csv"; tail -n 200 "$t/all.csv"; } > "$t/houses-test.csv"
printf 'model = Chain(Input(4), Affine(32), relu, Affine(1))\n' > "$t/house.flux"
reg=$t/house.html
if "$tool" train "$t/house.flux" --data "csv:$t/houses.csv,$t/houses-test.csv" --label-col price --epochs 120 \
     --val 0.1 --normalize --save "$t/house.ckpt" --report "$reg" > "$t/regout" 2>&1; then
  grep -q '<h2>Loss and R²</h2>' "$reg" && ok || bad "the regression page's curves are not headed 'Loss and R²'"
  curves "$reg" | grep -qi 'accuracy' && bad "the regression page's curves have an accuracy axis" || ok
  grep -qi '<th>[a-z ]*acc</th>' "$reg" && bad "the regression page's history has accuracy columns" || ok
  curves "$reg" | grep -q '>R²</text>' && curves "$reg" | grep -q '>test R²</text>' && ok ||
    bad "the regression page's curves have no R² axis or test R² curve"
  found=$(curves "$reg" | python3 "$t/ticks.py" 2>&1) && ok || bad "the regression's curves: $found"
  # the loss falls from 0.67 to 0.007: a log axis
  echo "$found" | grep -q 'loss:log' && ok || bad "the regression's loss (0.67 to 0.007) is not on a log axis: $found"
  # the last epoch's test MAE and R² against predict's prices and the file's, here
  "$tool" predict "$t/house.ckpt" "$t/houses-test.csv" > "$t/pred" 2>&1 || bad "predict failed: $(cat "$t/pred")"
  want=$(tail -n 200 "$t/all.csv" | cut -d, -f5 | paste -d' ' "$t/pred" - | awk '
    { p = $2; y = $3; n++; ae += (p > y ? p - y : y - p); se += (p - y) ^ 2; s += y; ss += y * y }
    END { printf "%.6g %.6g", ae / n, 1 - se / (ss - s * s / n) }')
  got=$(sed -n 's/.*<tr[^>]*><td>120<\/td>\(.*\)<\/tr>/\1/p' "$reg" | sed 's/<\/td><td>/ /g; s/<\/*td>//g')
  # epoch 120: train loss, val loss, val MAE, val R², test loss, test MAE, test R², learning rate, seconds
  echo "$got $want" | awk '{ mae = $6; r2 = $7; if (!(r2 <= 1 && r2 > 0.9 && $11 <= 1)) exit 1
      if (!($4 <= 1 && $4 > 0.9 && $3 > 0 && $3 < 3 * mae)) exit 1   # the validation split: plausible
      if ((mae - $10 > 0 ? mae - $10 : $10 - mae) > 1e-3 * $10 + 1) exit 1
      if ((r2 - $11 > 0 ? r2 - $11 : $11 - r2) > 2e-4) exit 1 }' && ok ||
    bad "the last epoch's test MAE and R² (epoch 120's row: $got) are not those of predict's prices (MAE, R²: $want), or its validation MAE and R² are implausible"
  grep -q '<th>val MAE</th><th>val R²</th>.*<th>test MAE</th><th>test R²</th>' "$reg" && ok ||
    bad "the regression's history has no MAE and R² columns"
else
  bad "the regression run failed: $(cat "$t/regout")"
fi
# prices as they are (no --normalize): R² climbs from about -5 to above 0, so the R²
# axis starts at -1 and the epochs below it are drawn hollow there, said in the legend
if "$tool" train "$t/house.flux" --data "csv:$t/houses.csv,$t/houses-test.csv" --label-col price --epochs 20 \
     --lr 0.05 --report "$t/raw.html" > "$t/rawout" 2>&1; then
  found=$(curves "$t/raw.html" | python3 "$t/ticks.py" 2>&1) && ok || bad "the raw prices' curves: $found"
  curves "$t/raw.html" | grep -q '>R² below -1, drawn at -1</text>' &&
    curves "$t/raw.html" | grep -q 'fill="white" stroke="#d62728"' && ok ||
    bad "the raw prices' R² below -1 is not drawn hollow at -1"
else
  bad "the raw prices' run failed: $(cat "$t/rawout")"
fi

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
