# cases.sh - sourced by bench/run.sh and bench/compare.sh (needs $here, the repository
# root): the cases of make bench, each a model file and a training batch, and the CPU
# line that heads their output.
# shellcheck shell=sh disable=SC2154 # $here comes from the script that sources this file

# model_file CASE - the model file of a case of mlp, cnn, resnet, lstm and gpt (an int8
# case, mlp-int8 or cnn-int8, runs its model: models/mlp.flux, models/cnn.flux)
model_file() {
  case $1 in lstm) echo "$here/models/char-rnn.flux" ;; gpt) echo "$here/models/char-gpt.flux" ;; *) echo "$here/models/${1%-int8}.flux" ;; esac
}
# batch_of CASE - its training batch: 32 sequences for the text models, else 64 samples
batch_of() { case $1 in lstm | gpt) echo 32 ;; *) echo 64 ;; esac; }
# check_cases WHO CASES - stops WHO (the script's name) at a case it does not know or
# whose model file is missing
check_cases() {
  for m in $2; do
    case $m in mlp | cnn | resnet | lstm | gpt | mlp-int8 | cnn-int8) ;; *) echo "$1: CFLUX_BENCH_MODELS: no model '$m' (mlp, cnn, resnet, lstm, gpt, mlp-int8, cnn-int8)" >&2; exit 2 ;; esac
    [ -f "$(model_file "$m")" ] || { echo "$1: no $(model_file "$m") for the case $m" >&2; exit 1; }
  done
}

flag() { grep -m 1 '^flags' /proc/cpuinfo | grep -qw "$1" && echo "$1 yes" || echo "$1 no"; }
# cpu_line - the CPU's model name, with its family and model numbers (AMD's name alone,
# e.g. "AMD EPYC", does not tell Zen 1 from Zen 5), its CPU count and its vector units
cpu_line() {
  echo "cpu: $(grep -m 1 '^model name' /proc/cpuinfo | sed 's/.*: //')" \
    "(family $(grep -m 1 '^cpu family' /proc/cpuinfo | sed 's/.*: //'), model $(grep -m 1 '^model[[:space:]]*:' /proc/cpuinfo | sed 's/.*: //')), $(nproc) CPUs; $(flag avx2), $(flag fma), $(flag avx512f)"
}
