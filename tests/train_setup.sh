# train_setup.sh - sourced by the tool's training tests: a scratch directory $t
# (removed on exit), pass/fail counting, and small data made here: train.csv
# (300 rows: a header "label,a,b,c,d", then 3 classes in 4 features, the label the
# index of the largest of the first three), test.csv (its first 100 rows), and m.flux,
# a classifier for it. Needs $tool and a name for the directory in $name.
pass=0 fail=0
t=$(mktemp -d "/tmp/cflux-$name-XXXXXX")
trap 'rm -rf "$t"' EXIT
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAILED: $*"; }

awk 'BEGIN { srand(7); print "label,a,b,c,d";
  for (i = 0; i < 300; i++) { a = rand(); b = rand(); c = rand(); d = rand();
    l = (a > b && a > c) ? 0 : (b > c ? 1 : 2); printf "%d,%.4f,%.4f,%.4f,%.4f\n", l, a, b, c, d } }' > "$t/train.csv"
head -n 101 "$t/train.csv" > "$t/test.csv"
echo 'model = Chain(Input(4), Affine(16), tanh, Affine(3), softmax)' > "$t/m.flux"
