# The two commands of the README, and a few more.
#
#   make demo      build, then train a model and print how it does (the main job)
#   make test      build and run every test: a release build (OpenBLAS), then a
#                  build with AddressSanitizer and UndefinedBehaviorSanitizer that
#                  uses the built-in matrix product
#   make install PREFIX=/usr/local
#
# Missing Debian packages are installed first when run as root (tools/bootstrap.sh).

PREFIX ?= /usr/local
JOBS   ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE  ?= cmake

.PHONY: all build deps demo test test-release test-asan install clean

all: build

deps:
	@sh tools/bootstrap.sh build

build: deps
	@$(CMAKE) -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
	@$(CMAKE) --build build -j $(JOBS)

demo: build
	@./build/example_train_mlp

test: test-release test-asan

test-release: build
	@cd build && ctest --output-on-failure -j $(JOBS)

test-asan: deps
	@$(CMAKE) -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCFLUX_SANITIZE=ON -DCFLUX_BLAS=OFF >/dev/null
	@$(CMAKE) --build build-asan -j $(JOBS)
	@cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j $(JOBS)

install: build
	@$(CMAKE) --install build --prefix $(PREFIX)

clean:
	rm -rf build build-asan
