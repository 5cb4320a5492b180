# Thin task runner. `make demo` and `make test` are the two commands README.md
# opens with; both install what is missing (scripts/setup.sh) and are quick
# when everything is already built.
SHELL := /bin/bash
.DEFAULT_GOAL := demo

BUILD       ?= build
ASAN_BUILD  ?= build-asan
FUZZ_BUILD  ?= build-fuzz
BENCH_BUILD ?= build-bench
STAGE       ?= $(CURDIR)/build-stage
FUZZ_SECONDS ?= 10
DEVSHARE    := $(BUILD)/lib/cli/devshare

.PHONY: setup build demo test test-unit test-asan test-fuzz test-install fuzz bench clean

setup:
	@bash scripts/setup.sh

$(BUILD)/build.ninja:
	meson setup $(BUILD)

build: setup $(BUILD)/build.ninja
	@ninja -C $(BUILD)

demo: build
	@bash examples/demo.sh $(DEVSHARE)

test: test-unit test-asan test-fuzz test-install
	@echo "make test: all suites passed"

test-unit: build
	meson test -C $(BUILD) --print-errorlogs

$(ASAN_BUILD)/build.ninja:
	meson setup $(ASAN_BUILD) -Db_sanitize=address,undefined -Db_lundef=false

test-asan: setup $(ASAN_BUILD)/build.ninja
	@ninja -C $(ASAN_BUILD)
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 meson test -C $(ASAN_BUILD) --print-errorlogs

$(FUZZ_BUILD)/build.ninja:
	CC=clang-14 CXX=clang++-14 meson setup $(FUZZ_BUILD) -Dfuzz=enabled -Dtests=disabled \
	  -Db_sanitize=address,undefined -Db_lundef=false -Ddefault_library=static

test-fuzz: setup $(FUZZ_BUILD)/build.ninja
	@ninja -C $(FUZZ_BUILD)
	@bash tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

# Longer fuzzing: make fuzz FUZZ_SECONDS=600
fuzz: test-fuzz

test-install: build
	@rm -rf $(STAGE)
	meson install -C $(BUILD) --destdir $(STAGE) --quiet
	@bash examples/embed/check.sh $(STAGE)

$(BENCH_BUILD)/build.ninja:
	meson setup $(BENCH_BUILD) -Dbench=enabled -Dtests=disabled --buildtype=release

bench: setup $(BENCH_BUILD)/build.ninja
	@ninja -C $(BENCH_BUILD)
	@for b in $(BENCH_BUILD)/bench/*_bench; do $$b --benchmark_min_time=0.5; done

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD) $(BENCH_BUILD) $(STAGE)
