# The two commands of the README, and a few more.
#
#   make demo      build the tool, then train models/mlp.flux on Fashion-MNIST and
#                  print its test accuracy (the main job)
#   make test      build and run every test: a release build (OpenBLAS, and Open MPI
#                  for the data-parallel tests), then a build with
#                  AddressSanitizer and UndefinedBehaviorSanitizer that uses the
#                  built-in matrix product and no MPI, then the threaded tests
#                  under ThreadSanitizer (test-tsan), then a short run of every
#                  fuzzer (the notation's compiler for 30 s, the others 10 s each).
#                  Each build treats a compiler warning as an error (CFLUX_WERROR).
#                  It installs what the tests need first (Fashion-MNIST, clang's
#                  libFuzzer, a Python environment with safetensors, Open MPI, and
#                  the interoperability tests' PyTorch, onnx and onnxruntime from
#                  PyPI in build-venv-interop: about 3 minutes and 5.5 GB the first
#                  time): nothing is skipped; a test whose tool is missing fails
#                  saying what is missing.
#   make interop-deps   only build-venv-interop (PyTorch, onnx, onnxruntime).
#   make test-python    the Python module: pip install ./python into a virtual
#                  environment (build-venv-python: numpy and pytest from PyPI; the
#                  module builds its own copy of the library, about a minute), print
#                  its version, then its tests with pytest against the release
#                  build's tool and library (part of make test).
#   make test-docs  every command README.md and docs/ show, run and its output compared
#                  with the page's; long runs stopped after 8 s (part of make test).
#   make docs-check the same with the long runs whole (about 2.5 hours on 2 cores).
#   make fuzz FUZZ_SECONDS=600   a longer fuzzing run (each fuzzer that long)
#   make bench     build, then cflux side by side with PyTorch 2 and MXNet 1.9.1 on the
#                  models of bench/run.sh (the MLP, CNN, ResNet and character GPT of
#                  models/, and the MLP in int8: training and inference samples/s, batch-1
#                  latency, peak memory) in interleaved rounds at every thread count
#                  (BENCH_ROUNDS=5 BENCH_SECONDS=3: about 40 minutes on 2 cores). It
#                  makes the peers' Python environment first, once (a few GB, in
#                  ~/.cache/cflux). Never part of make test.
#   make install PREFIX=/usr/local
#
# Missing Debian packages are installed first when run as root (tools/bootstrap.sh).

PREFIX ?= /usr/local
JOBS   ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE  ?= cmake

FUZZ_SECONDS ?= 30
FUZZ_OTHERS ?= $(FUZZ_SECONDS)
BENCH_ROUNDS ?= 5
BENCH_SECONDS ?= 3
FUZZERS = fuzz_model fuzz_parser fuzz_safetensors fuzz_params fuzz_torch fuzz_args fuzz_idx fuzz_csv fuzz_text \
  fuzz_png fuzz_jpeg

.PHONY: all build deps test-deps interop-deps demo test test-release test-python test-docs docs-check test-asan test-tsan test-fuzz fuzz bench \
  install clean

all: build

deps:
	@sh tools/bootstrap.sh build

# quiet when there is nothing to do: no "Built target" or make directory lines
build: deps
	@$(CMAKE) -S . -B build -DCMAKE_BUILD_TYPE=Release -DCMAKE_TARGET_MESSAGES=OFF >/dev/null
	@$(CMAKE) --build build -j $(JOBS) -- --no-print-directory

# the demo builds the tool alone, quietly (the compiler's lines go to build/demo-build.log,
# shown if the build fails): not the tests, benchmarks and examples that make build adds
demo: deps
	@sh tools/bootstrap.sh demo
	@echo "demo: building build/cflux (the compiler's output: build/demo-build.log)"
	@mkdir -p build
	@{ $(CMAKE) -S . -B build -DCMAKE_BUILD_TYPE=Release && \
	  $(CMAKE) --build build -j $(JOBS) --target cflux; } > build/demo-build.log 2>&1 || \
	  { cat build/demo-build.log; echo "demo: the build failed (above)"; exit 1; }
	@./build/cflux train models/mlp.flux

test: test-deps interop-deps test-release test-python test-docs test-asan test-tsan test-fuzz

# everything the tests use: the data set, clang's libFuzzer, Python with safetensors
test-deps:
	@sh tools/bootstrap.sh test
	@sh tools/pyenv.sh build-venv

interop-deps: test-deps
	@sh tools/pyenv.sh build-venv-interop interop

test-release: test-deps deps
	@$(CMAKE) -S . -B build -DCMAKE_BUILD_TYPE=Release -DCFLUX_WERROR=ON >/dev/null
	@$(CMAKE) --build build -j $(JOBS)
	@cd build && ctest --output-on-failure -j $(JOBS)

PYVENV = build-venv-python
test-python: build
	@sh tools/bootstrap.sh python
	@sh tools/pyenv.sh $(PYVENV) python
	@$(PYVENV)/bin/pip install --quiet --disable-pip-version-check --no-deps --force-reinstall ./python
	@printf '%s\n' 'python: $(PYVENV)/bin/python -c "import cflux; print(cflux.version())"'
	@$(PYVENV)/bin/python -c "import cflux; print(cflux.version())"
	@CFLUX_TOOL=$(CURDIR)/build/cflux CFLUX_LIB=$(CURDIR)/build/libcflux.so \
	  $(PYVENV)/bin/python -m pytest -q -p no:cacheprovider python/tests

# every command that README.md and docs/*.md show, run in build/docs-check/PAGE and its
# output compared with the page's (tests/check_docs.py; docs/errors.md has its own
# checker among the release tests). The long runs (a ResNet, the character GPT, make
# bench, the fine-tuning example: minutes to half an hour each) run 8 s here, what they
# printed by then compared; make docs-check runs them whole (about 2.5 hours on 2 cores).
DOCS = README.md $(filter-out docs/errors.md,$(sort $(wildcard docs/*.md)))
test-docs: build interop-deps
	@python3 tests/check_docs.py build --cap 8 $(DOCS)

docs-check: build interop-deps
	@python3 tests/check_docs.py build --long $(DOCS)

test-asan: test-deps
	@$(CMAKE) -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCFLUX_SANITIZE=ON -DCFLUX_BLAS=OFF -DCFLUX_MPI=OFF \
	  -DCFLUX_WERROR=ON >/dev/null
	@$(CMAKE) --build build-asan -j $(JOBS)
	@cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j $(JOBS)

# ThreadSanitizer on the tests whose threads share memory: the pool (test_pool), user
# threads each running a model (test_threads), the kernels split between threads at
# several thread counts (the golden and kernel tests, the built-in GEMM among them),
# training, and the images read ahead by a thread of their own (test_images). Built
# without OpenBLAS (its threads are not instrumented) and without MPI, as the ASan
# build is; only these tests are built: about 2.5 minutes on 2 cores (test_gemm_builtin's
# sweep of sizes, another 50 s, is left out).
TSAN_TESTS = test_pool test_threads test_images test_exec test_train test_optim test_vmath \
  test_conv_direct test_conv_im2col test_pooling test_dropout test_embedding test_lstm_fused test_golden_mlp \
  test_golden_conv test_golden_rnn test_golden_transformer test_golden_layernorm test_golden_batchnorm \
  test_golden_pool test_golden_softmax test_golden_attention
empty :=
TSAN_REGEX = ^($(subst $(empty) $(empty),|,$(strip $(TSAN_TESTS))))$$
test-tsan: test-deps
	@$(CMAKE) -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DCFLUX_TSAN=ON -DCFLUX_BLAS=OFF -DCFLUX_MPI=OFF \
	  -DCFLUX_WERROR=ON >/dev/null
	@$(CMAKE) --build build-tsan -j $(JOBS) --target $(TSAN_TESTS)
	@cd build-tsan && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
	  ctest --output-on-failure -j $(JOBS) -R '$(TSAN_REGEX)'

# Fuzzing needs clang with its libFuzzer runtime (Debian: clang, libclang-rt-dev),
# which test-deps installs.
test-fuzz: test-deps
	@$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=30 FUZZ_OTHERS=10

fuzz: deps
	@$(CMAKE) -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCFLUX_FUZZ=ON -DCFLUX_BLAS=OFF -DCFLUX_TESTS=OFF \
	  -DCFLUX_WERROR=ON >/dev/null
	@$(CMAKE) --build build-fuzz -j $(JOBS) --target $(FUZZERS)
	@sh tests/fuzz/run.sh build-fuzz/fuzz_model tests/fuzz/corpus_model $(FUZZ_SECONDS)
	@for f in $(filter-out fuzz_model,$(FUZZERS)); do \
	  sh tests/fuzz/run.sh build-fuzz/$$f tests/fuzz/corpus_$${f#fuzz_} $(FUZZ_OTHERS) || exit 1; \
	done

# A benchmark, not a test: figures on a shared machine are noisy (bench/run.sh).
bench: build
	@sh tools/bootstrap.sh bench
	@sh bench/pyenv.sh >/dev/null
	@sh bench/run.sh $(BENCH_ROUNDS) $(BENCH_SECONDS)

install: build
	@$(CMAKE) --install build --prefix $(PREFIX)

clean:
	rm -rf build build-asan build-tsan build-fuzz build-venv
