# The two commands of the README, and a few more.
#
#   make demo      build, then train models/mlp.flux on Fashion-MNIST and print its
#                  test accuracy (the main job)
#   make test      build and run every test: a release build (OpenBLAS), then a
#                  build with AddressSanitizer and UndefinedBehaviorSanitizer that
#                  uses the built-in matrix product, then 30 s of fuzzing of the
#                  notation's compiler and 10 s each of the safetensors, CSV and
#                  IDX readers (when clang's libFuzzer is installed)
#   make fuzz FUZZ_SECONDS=600   a longer fuzzing run
#   make install PREFIX=/usr/local
#
# Missing Debian packages are installed first when run as root (tools/bootstrap.sh).

PREFIX ?= /usr/local
JOBS   ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE  ?= cmake

FUZZ_SECONDS ?= 30

.PHONY: all build deps demo test test-release test-asan test-fuzz fuzz install clean

all: build

deps:
	@sh tools/bootstrap.sh build

build: deps
	@$(CMAKE) -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
	@$(CMAKE) --build build -j $(JOBS)

demo: build
	@sh tools/bootstrap.sh demo
	@./build/cflux train models/mlp.flux

test: test-release test-asan test-fuzz

test-release: build
	@cd build && ctest --output-on-failure -j $(JOBS)

test-asan: deps
	@$(CMAKE) -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCFLUX_SANITIZE=ON -DCFLUX_BLAS=OFF >/dev/null
	@$(CMAKE) --build build-asan -j $(JOBS)
	@cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j $(JOBS)

# Fuzzing needs clang with its libFuzzer runtime (Debian: clang, libclang-rt-dev).
HAVE_LIBFUZZER = $(shell printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' | \
  clang -x c - -fsanitize=fuzzer -o /tmp/cflux-fuzz-probe 2>/dev/null && echo yes; rm -f /tmp/cflux-fuzz-probe)

test-fuzz: deps
ifeq ($(HAVE_LIBFUZZER),yes)
	@$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=$(FUZZ_SECONDS)
else
	@echo "fuzz: skipped: clang's libFuzzer is not installed (apt-get install clang libclang-rt-dev)"
endif

fuzz: deps
	@$(CMAKE) -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCFLUX_FUZZ=ON -DCFLUX_BLAS=OFF -DCFLUX_TESTS=OFF >/dev/null
	@$(CMAKE) --build build-fuzz -j $(JOBS) --target fuzz_model fuzz_safetensors fuzz_csv fuzz_idx
	@sh tests/fuzz/run.sh build-fuzz/fuzz_model tests/fuzz/corpus_model $(FUZZ_SECONDS)
	@sh tests/fuzz/run.sh build-fuzz/fuzz_safetensors tests/fuzz/corpus_safetensors 10
	@sh tests/fuzz/run.sh build-fuzz/fuzz_csv tests/fuzz/corpus_csv 10
	@sh tests/fuzz/run.sh build-fuzz/fuzz_idx tests/fuzz/corpus_idx 10

install: build
	@$(CMAKE) --install build --prefix $(PREFIX)

clean:
	rm -rf build build-asan build-fuzz
