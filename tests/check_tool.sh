#!/bin/sh
# check_tool.sh CFLUX SOURCE_DIR - the command-line tool: its commands, their output
# and exit codes (0 ok, 1 bad model or data, 2 bad usage).
set -u
tool=$1 src=${2:-.} pass=0 fail=0
tmp=$(mktemp -d /tmp/cflux-tool-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
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
expect 0 'ok: 109386 weights in 6 parameters' check "$src/models/mlp.flux"
expect 0 'input x: (B, 784)' check "$src/models/mlp.flux"
expect 0 'output 0: (B, 15)' check "$src/models/tlp.flux"
sed 's/Affine(20, 15)/Affine(21, 15)/' "$src/models/tlp.flux" > "$tmp/bad.flux"
expect 1 'in TLP at .*bad.flux:5:13' check "$tmp/bad.flux"
expect 1 'cannot open' check "$tmp/missing.flux"
expect 2 'cflux check: needs MODEL' check
expect 2 "cflux check: takes MODEL; 'b' is one argument too many" check a b
expect 0 '(7, 784) \* (784, 128) -> (7, 128)' shapes "$src/models/mlp.flux" --batch 7
expect 1 'shapes stop fitting here' shapes "$tmp/bad.flux"
# its shapes in one column: the input's, every op's (places of any length) and the output's
if "$tool" shapes "$src/models/tlp.flux" --batch 5 | awk '!/called at/ && /\(5, / { p = index($0, "(5, ");
    if (!first) first = p; else if (p != first) off++; rows++ } END { exit !(rows >= 6 && !off) }'; then pass=$((pass + 1))
else fail=$((fail + 1)); echo "cflux shapes: the shapes are not in one column: $("$tool" shapes "$src/models/tlp.flux" --batch 5)"; fi
expect 2 'cflux shapes: --batch needs a whole number from 1 to 1048576' shapes "$src/models/mlp.flux" --batch 0
expect 2 "unknown option '--frob'" shapes "$src/models/mlp.flux" --frob
expect 0 'digraph model' graph "$src/models/tlp.flux"
expect 0 'param first.W' graph "$src/models/tlp.flux"
expect 1 'matrix product shapes do not match' graph "$tmp/bad.flux"
"$tool" graph "$src/models/mlp.flux" -o "$tmp/g.dot" && grep -q 'input x' "$tmp/g.dot" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "graph -o did not write the file"; }
# check compiles and checks shapes without allocating the 9.4 GB of weights
echo 'model = Chain(Input(784), Affine(3000000), softmax)' > "$tmp/big.flux"
expect 0 'big.flux: ok: 2355000000 weights in 2 parameters (9420.0 MB)' check "$tmp/big.flux" --max-memory 64M
expect 0 'usage: cflux check MODEL' help check
expect 2 "cflux help: unknown command 'frob'" help frob
# version and bench say which kernels run and why; bench's JSON has every figure,
# each a positive number (not a timing test: any speed passes)
expect 0 '^kernels: builtin-\(avx512\|avx2\|portable\)\|^kernels: openblas' version
expect 0 '"kernels": {"gemm": "' version --json
expect 1 'cannot open' bench "$tmp/missing.flux"
expect 2 'cflux bench: --seconds needs a number from 0.1 to 3600' bench "$src/models/mlp.flux" --seconds 0
expect 2 "cflux bench: --loss is xent or mse, not 'l1'" bench "$src/models/mlp.flux" --loss l1
expect 0 'latency .* us .*batch 1, median of 10000 calls' bench "$src/models/tlp.flux" --seconds 0.1 --threads 1
expect 0 'latency .* us .*batch 1, median of 10000 calls' bench "$src/models/cnn.flux" --seconds 0.1 --threads 1
# an input of embedding indices: check says so, bench fills it with whole numbers below
# the vocabulary (random floats would fail the forward)
expect 0 'input x: (B, 50), indices in 0\.\.75' check "$src/tests/models/good/embedding_sequence.flux"
expect 0 'train .* samples/s' bench "$src/tests/models/good/embedding_sequence.flux" --seconds 0.1 --threads 1
if "$tool" bench "$src/models/mlp.flux" --seconds 0.1 --batch 32 --json > "$tmp/bench.json" &&
   python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
for k in ("train_samples_per_sec", "infer_samples_per_sec", "latency_us", "peak_rss_mb", "train_gflops", "peak_gflops"):
    assert d[k] > 0, k
assert d["batch"] == 32 and d["infer_batch"] == 1000 and d["latency_calls"] == 10000
assert d["kernels"]["gemm"] and d["kernels"]["why"] and d["cpu"] and d["isa"]
' "$tmp/bench.json"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "bench --json: bad output: $(cat "$tmp/bench.json")"; fi
# a GPT: bench also generates, a character at a time against the cache (any speed passes)
printf 'model = Chain(Input(16), GPT(20, 16, layers = 1, heads = 2, context = 16))\n' > "$tmp/gpt.flux"
expect 0 'generate .* chars/s .*batch 1, a character at a time against the cache' bench "$tmp/gpt.flux" --seconds 0.1 --threads 1 --batch 4
# import and export: PyTorch's layout and back, through the tool (test_torch_io and the
# interop test check the values); a file that does not fit is one line, exit 1
printf 'model = Chain(Input(4), Affine(3), relu, Affine(2), softmax)\n' > "$tmp/small.flux"
printf 'model = Chain(Input(4), Affine(5), relu, Affine(2), softmax)\n' > "$tmp/wide.flux"
printf 'model = Chain(Input(4), Affine(3), relu, Affine(2), relu, Affine(2), softmax)\n' > "$tmp/deep.flux"
awk 'BEGIN { for (i = 0; i < 40; i++) printf "%d,%d,%d,%d,%d\n", i % 2, i % 5, i % 3, i % 7, i % 2 * 3 }' > "$tmp/two.csv"
expect 0 'epoch' train "$tmp/small.flux" --data "csv:$tmp/two.csv" --epochs 1 --save "$tmp/small.ckpt"
# a recurrent net outside unroll: check, summary and train say so, naming it and its
# place; inside unroll, or in a model of no state, nothing is noted
printf 'model = Chain(Input(4), GRU(8), Affine(2), softmax)\n' > "$tmp/gru.flux"
printf 'model = unroll(Chain(Input(4), GRU(8), Affine(2), softmax), 3)\n' > "$tmp/unrolled.flux"
note="^note: GRU at $tmp/gru.flux:1:25 keeps a state but runs outside unroll: .*write model = unroll(Chain(Input(4), GRU(8), Affine(2), softmax), n), whose Input is one step's$"
expect 0 "$note" check "$tmp/gru.flux"
expect 0 "$note" summary "$tmp/gru.flux"
expect 0 "$note" train "$tmp/gru.flux" --data "csv:$tmp/two.csv" --epochs 1 --quiet
for f in unrolled small; do
  if "$tool" check "$tmp/$f.flux" 2>&1 | grep -q 'note'; then fail=$((fail + 1)); echo "cflux check $f.flux: a note: $("$tool" check "$tmp/$f.flux" 2>&1)"
  else pass=$((pass + 1)); fi
done
expect 0 'torch.safetensors: PyTorch state_dict' export "$tmp/small.flux" --params "$tmp/small.ckpt" --to-torch "$tmp/torch.safetensors"
expect 0 'small.onnx: ONNX, opset 17' export "$tmp/small.flux" --params "$tmp/small.ckpt" --onnx "$tmp/small.onnx"
expect 0 'back.params: 23 weights in 4 parameters from' import "$tmp/small.flux" --from-torch "$tmp/torch.safetensors" --save "$tmp/back.params"
expect 1 "^error: .*torch.safetensors: tensor '0.weight' is (3, 4), but the model's Affine (at .*wide.flux:1:25) needs (5, 4)" import "$tmp/wide.flux" --from-torch "$tmp/torch.safetensors" --save "$tmp/x.params"
expect 1 "tensor '4.weight' is missing: the file has no module for layer '5', the model's Affine" import "$tmp/deep.flux" --from-torch "$tmp/torch.safetensors" --save "$tmp/x.params"
[ "$("$tool" import "$tmp/wide.flux" --from-torch "$tmp/torch.safetensors" --save "$tmp/x.params" 2>&1 | wc -l)" -eq 1 ] && [ ! -e "$tmp/x.params" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "import: a bad file is not one line, or a parameter file was written"; }
expect 2 'cflux export: needs --to-torch FILE or --onnx FILE (and the weights' export "$tmp/small.flux"
expect 2 'cflux export: needs --params CHECKPOINT (the trained weights), or the checkpoint alone' export "$tmp/small.flux" --onnx "$tmp/x.onnx"
expect 2 'cflux import: needs --from-torch FILE and --save PATH' import "$tmp/small.flux" --save "$tmp/x"
expect 2 'cflux export: --map names PyTorch.s modules: it goes with --to-torch' export "$tmp/small.flux" --params "$tmp/small.ckpt" --onnx "$tmp/o.onnx" --map "$tmp/m"
# summary: a row per layer with its place in the source, its parameters and FLOPs
expect 0 '^Affine  *[^ ]*mlp.flux:4:3  *(B, 128)  *100480  *200.8K  *201.0K' summary "$src/models/mlp.flux"
expect 0 '^    2.γ 32, 2.β 32; statistics (not trained): 2.mean 32, 2.var 32' summary "$src/models/cnn-bn.flux" --batch 8
expect 0 '"totals":{"trained":109386,.*"flops_forward":218812,"flops_backward":236668' summary "$src/models/mlp.flux" --json
expect 0 '^    TransformerBlock  .*(B, 128, 128) ×4  *793088 ' summary "$src/models/char-gpt.flux" --depth 3
expect 0 '"name":"TransformerBlock","kind":"layer","depth":3,"parent":4,' summary "$src/models/char-gpt.flux" --depth 3 --json
expect 2 'cflux summary: --depth needs a whole number from 1 to 1000, not .0.' summary "$src/models/mlp.flux" --depth 0
# predict opens the model and --params before its input: a bad checkpoint is said
# first, and the input is not touched (a FIFO with no writer would hang its read)
printf '0,1,2\nx,y\n' > "$tmp/bad.csv"
expect 1 "^error: $tmp/missing.ckpt: cannot open" predict "$src/models/mlp.flux" --params "$tmp/missing.ckpt" "$tmp/bad.csv"
echo junk > "$tmp/junk.ckpt"
mkfifo "$tmp/fifo"
out=$(timeout 10 "$tool" predict "$src/models/mlp.flux" --params "$tmp/junk.ckpt" "$tmp/fifo" 2>&1); rc=$?
if [ "$rc" -eq 1 ] && printf '%s' "$out" | grep -q "^error: $tmp/junk.ckpt: too short"; then pass=$((pass + 1))
else fail=$((fail + 1)); echo "cflux predict with a bad --params and an input never written: exit $rc, output: $out"; fi
echo "tool: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
