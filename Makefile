# Thin task runner. `make demo` and `make test` are the two commands README.md
# opens with; both install what is missing (scripts/setup.sh) and are quick
# when everything is already built.
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
.DEFAULT_GOAL := demo

# Two C++ builds serve every target:
#   BUILD      gcc, release (what the image ships), with the benchmarks and the
#              Python extension: the unit tests, CLI and Python tests of `make
#              test`, install, serve, e2e, bench, the oracles, image, lint
#   SAN_BUILD  clang, AddressSanitizer + UBSan, coverage-instrumented for
#              libFuzzer (asserts on): the unit tests of `make test-asan` and
#              the fuzzers (.ci/run runs both after `make test`)
# (and a third, build-py, meson-python's for `make test-python-package`).
BUILD       ?= build
SAN_BUILD   ?= build-san
E2E_BUILD   ?= build-e2e
STAGE       ?= $(CURDIR)/build-stage
# `make test-fuzz` fuzzes repeatably: the committed corpus, then FUZZ_RUNS inputs
# per target from FUZZ_SEED. `make fuzz` explores: random seeds, FUZZ_SECONDS
# per target, FUZZ_JOBS targets at a time.
FUZZ_RUNS    ?= 200000
# The scenario target parses YAML at about 1,000 inputs/s in the sanitizer
# build: fewer of its own (the rest of `make fuzz`'s exploration).
FUZZ_RUNS_SCENARIO ?= 50000
FUZZ_SEED    ?= 1
FUZZ_SECONDS ?= 60
FUZZ_JOBS    ?= 2
# One interpreter builds the Python module and runs pytest: PYTHON, of which
# the venv is made.
PYTHON      ?= python3
VENV        ?= build-venv
VENV_PY     := $(VENV)/bin/python
DEVSHARE    := $(BUILD)/lib/cli/devshare
# Each suite appends "label passed failed" here; `make test` sums it up.
RESULTS     := $(CURDIR)/$(BUILD)/test-results.txt
# What `make test` runs, in order; each is timed (scripts/stage.sh) and the
# table printed at the end. .ci/run runs the sanitizers, the fuzzers and the
# oracles besides (test-asan, test-fuzz, test-oracle): CONTRIBUTING.md.
TEST_TARGETS := build test-cli test-unit test-install test-serve test-hostile \
  test-observability test-python test-docs

IMAGE_DIR   ?= build-image

.PHONY: setup build demo test lint openb openb-bound plots load load-apiserver compare audit-cost e2e soak dra-failover image test-image test-serve test-hostile test-observability test-unit test-cli test-asan test-fuzz san-build test-install test-python test-docs test-python-package test-oracle oracle oracle-speed python fuzz bench bench-check clean

setup:
	@bash scripts/setup.sh

# The release build, with the benchmarks and the Python extension, built for
# $(PYTHON) (the interpreter of `make python`'s venv; a native file names it).
$(BUILD)/build.ninja:
	@mkdir -p $(BUILD)
	@printf "[binaries]\npython = '%s'\n" "$$($(PYTHON) -c 'import sys; print(sys.executable)')" >$(BUILD)/python.ini
	meson setup $(BUILD) --buildtype=release -Dbench=enabled -Dpython=enabled --native-file $(BUILD)/python.ini

build: setup $(BUILD)/build.ninja
	@ninja -C $(BUILD)

demo: build
	@bash examples/demo.sh $(DEVSHARE)

test: setup
	@mkdir -p $(BUILD) && rm -f $(RESULTS)
	@MAKE="$(MAKE)" bash scripts/stage.sh make test $(TEST_TARGETS)
	@awk '{p += $$2; f += $$3; s += $$4} END {printf "make test: %d passed, %d failed%s\n", p, f, \
	  (s ? sprintf(", %d skipped", s) : ""); exit f > 0}' $(RESULTS)

# clang-format on every C++ file, clang-tidy (.clang-tidy) on lib/'s sources
# with the static analyzer in its shallow mode; `make lint LINT_ANALYZER=deep`
# analyzes as deep as clang's default does (scripts/lint.sh).
lint: build
	@bash scripts/lint.sh $(BUILD) 2

# The unit tests from the release build (the runner is built only when asked
# for); test-asan runs them under the sanitizers.
test-unit: build
	@ninja -C $(BUILD) tests/unit/unit_tests
	@bash tests/run_unit.sh $(BUILD) unit $(RESULTS)

test-cli: build
	@bash tests/cli/run.sh $(DEVSHARE) $(RESULTS)

# One clang build for the sanitizers and the fuzzers: every target
# coverage-instrumented (-Dfuzz), so the unit tests run under ASan+UBSan
# from the same objects as the libFuzzer targets. Unoptimized (Boost.Beast's
# code builds three times as fast at -O0 under the sanitizers) but for the
# core and the simulator, where the fuzzers spend their runs (meson.build).
# Line tables are all the debug information a sanitizer's report needs.
$(SAN_BUILD)/build.ninja:
	CC=clang-14 CXX=clang++-14 meson setup $(SAN_BUILD) --buildtype=debug -Dfuzz=enabled -Dcli=disabled \
	  -Db_sanitize=address,undefined -Db_lundef=false -Ddefault_library=static \
	  -Dcpp_args=-gline-tables-only

san-build: setup $(SAN_BUILD)/build.ninja
	@ninja -C $(SAN_BUILD) all tests/unit/unit_tests

test-asan: san-build
	@ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	  bash tests/run_unit.sh $(SAN_BUILD) unit-asan+ubsan $(RESULTS)

test-fuzz: san-build
	@mkdir -p $(dir $(RESULTS))
	@bash tests/fuzz/run.sh $(SAN_BUILD) --runs $(FUZZ_RUNS) --runs-for scenario=$(FUZZ_RUNS_SCENARIO) \
	  --seed $(FUZZ_SEED) \
	  --jobs $(FUZZ_JOBS) | tee $(SAN_BUILD)/fuzz.log
	@grep -E '^fuzz: [0-9]+ passed, [0-9]+ failed' $(SAN_BUILD)/fuzz.log | tail -1 | \
	  sed -E 's/fuzz: ([0-9]+) passed, ([0-9]+) failed/fuzz \1 \2/' >>$(RESULTS)

# Exploration from random seeds: make fuzz FUZZ_SECONDS=600 FUZZ_JOBS=2
fuzz: san-build
	@bash tests/fuzz/run.sh $(SAN_BUILD) --seconds $(FUZZ_SECONDS) --jobs $(FUZZ_JOBS)

# devshare serve end to end against the stand-in API server (tests/e2e).
test-serve: build
	@$(PYTHON) tests/e2e/serve_check.py $(DEVSHARE) $(RESULTS)

# devshare serve under hostile clients (slow headers and bodies, 10,000 idle
# connections, malformed TLS, oversized requests) while a well-behaved client
# is served: latency, RSS and descriptors (tests/e2e/hostile_clients.py).
test-hostile: build
	@$(PYTHON) tests/e2e/hostile_clients.py $(DEVSHARE) $(RESULTS)

# The Grafana dashboard and Prometheus rules in deploy/ against a running serve
# (promtool from Debian's prometheus package, installed when missing).
test-observability: build
	@$(PYTHON) tests/deploy/check_observability.py --devshare $(DEVSHARE) $(RESULTS)

# /filter under load with a 5,000-node cache, on loopback (tests/e2e/load.sh):
# LOAD_SECONDS of vegeta at a fixed LOAD_RATE per second (open loop; vegeta is
# built from the Go module proxy on first use), then LOAD_SECONDS of wrk with
# each count of LOAD_CONNECTIONS (closed loop). Fails on any error; prints the
# latency against the p99 target, the CPU of each process and serve's memory.
LOAD_NODES ?= 5000
LOAD_SECONDS ?= 20
LOAD_RATE ?= 1000
LOAD_CONNECTIONS ?= 50,200
load: build
	@bash tests/e2e/load.sh $(DEVSHARE) $(LOAD_NODES) $(LOAD_SECONDS) $(LOAD_RATE) $(LOAD_CONNECTIONS)

# devshare serve against a real kube-apiserver and etcd (the e2e control plane):
# /filter with LOAD_API_CONNECTIONS wrk connections for LOAD_SECONDS over
# LOAD_API_NODES nodes, each Filter PATCHing the pod. LOAD_API_COMPARE adds
# other builds side by side, as LABEL=PATH words (say a build before a change).
LOAD_API_NODES ?= 500
LOAD_API_CONNECTIONS ?= 50
LOAD_API_COMPARE ?=
load-apiserver: build
	@E2E_DIR=$(CURDIR)/$(E2E_BUILD)/load-apiserver bash tests/e2e/control-plane.sh run -- \
	  bash tests/e2e/api-load.sh $(LOAD_API_NODES) $(LOAD_SECONDS) $(LOAD_API_CONNECTIONS) \
	  $(LOAD_API_COMPARE) this=$(CURDIR)/$(DEVSHARE)

test-install: build
	@rm -rf $(STAGE)
	meson install -C $(BUILD) --destdir $(STAGE) --quiet
	@bash examples/embed/check.sh $(STAGE)
	@echo "install 1 0" >>$(RESULTS)

$(VENV)/.ready: scripts/python-requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV_PY) -m pip install -q -r scripts/python-requirements.txt
	@touch $@

# The package of the release build (<build>/bindings/python holds it whole) on
# the venv's path, through a .pth file: nothing is compiled a second time, and
# a rebuild is seen at the next import. The tests load devshare's pytest plugin
# with -p, since no entry point is installed this way.
python: build $(VENV)/.ready
	@test -f $(BUILD)/bindings/python/devshare/testing.py || { echo "make python: $(BUILD) was set up without \
	  the Python extension (-Dpython=enabled); remove $(BUILD) and run again" >&2; exit 1; }
	@echo "$(CURDIR)/$(BUILD)/bindings/python" >"$$($(VENV_PY) -c \
	  'import sysconfig; print(sysconfig.get_paths()["purelib"])')/devshare-build.pth"

test-python: python
	@mkdir -p $(dir $(RESULTS))
	@$(VENV_PY) -m pytest tests/python -q -p no:cacheprovider -p devshare.testing | tee $(VENV)/pytest.log
	@grep -Eo '[0-9]+ passed' $(VENV)/pytest.log | tail -1 | awk '{print "python", $$1, 0}' >>$(RESULTS)

# The documentation (mkdocs.yml: docs/, by reader) built with --strict into
# build-docs/, where a warning (a broken link or anchor in docs/, a page not in
# the nav) fails it, and the relative links of README.md, CONTRIBUTING.md,
# tests/README.md and lib/core/README.md checked (scripts/check_links.py). Not --quiet, under which mkdocs 1.6 counts
# no warning (mkdocs#4126): its INFO lines are left out instead.
$(VENV)/.docs-ready: scripts/docs-requirements.txt
	test -x $(VENV_PY) || $(PYTHON) -m venv $(VENV)
	$(VENV_PY) -m pip install -q -r scripts/docs-requirements.txt
	@touch $@

test-docs: $(VENV)/.docs-ready
	@mkdir -p $(dir $(RESULTS))
	@$(VENV_PY) -m mkdocs build --strict 2>&1 | { grep -v '^INFO ' || true; }
	@$(VENV_PY) scripts/check_links.py README.md CONTRIBUTING.md tests/README.md lib/core/README.md
	@echo "docs 1 0" >>$(RESULTS)

# The package as `pip install .` builds it (meson-python: the core linked in
# statically, in build-py), installed in a venv of its own, and the Python
# tests against it, its pytest plugin found by its entry point. Not in `make
# test`, as it compiles the core a second time (2.9 minutes alone).
PACKAGE_VENV ?= build-venv-package
test-python-package: setup
	$(PYTHON) -m venv $(PACKAGE_VENV)
	$(PACKAGE_VENV)/bin/python -m pip install -q -r scripts/python-requirements.txt \
	  -r scripts/python-build-requirements.txt
	$(PACKAGE_VENV)/bin/python -m pip install -q --no-build-isolation . -Cbuild-dir=build-py
	$(PACKAGE_VENV)/bin/python -m pytest tests/python -q -p no:cacheprovider

# The differential oracles (tests/oracle/README.md): devshare against HAMi's
# and Volcano's own Go code (Volcano 1.12's handshake and node lock included),
# and its DRA allocation and CEL selectors against Kubernetes'
# (k8s.io/dynamic-resource-allocation), on seeded scenarios. `make test-oracle` runs
# ORACLE_TEST_SCENARIOS of each;
# `make oracle ORACLE_SCENARIOS=10000` the full comparison; `make oracle-speed`
# Filter on 100, 1000 and 5000 nodes x 8 GPUs, HAMi's and devshare's, as a ratio.
# HAMi comes from ../shared/hami/v2.10.0; without a Go toolchain or that tree
# the HAMi side is reported as skipped, and a harness that does not build fails.
ORACLE_TEST_SCENARIOS ?= 300
ORACLE_SCENARIOS ?= 10000
ORACLE_SEED ?= 1
ORACLE_SPEED_NODES ?= 100,1000,5000

test-oracle: python
	@mkdir -p $(dir $(RESULTS))
	@bash tests/oracle/build.sh
	@$(VENV_PY) tests/oracle/compare.py --scenarios $(ORACLE_TEST_SCENARIOS) --seed $(ORACLE_SEED) \
	  --results $(RESULTS)
	@$(VENV_PY) tests/oracle/compare_dra.py --scenarios $(ORACLE_TEST_SCENARIOS) --seed $(ORACLE_SEED) \
	  --results $(RESULTS)
	@$(VENV_PY) tests/oracle/compare_volcano112.py --scenarios $(ORACLE_TEST_SCENARIOS) \
	  --seed $(ORACLE_SEED) --results $(RESULTS)

oracle: python
	@bash tests/oracle/build.sh
	$(VENV_PY) tests/oracle/compare.py --scenarios $(ORACLE_SCENARIOS) --seed $(ORACLE_SEED) --confirm-ties 100
	$(VENV_PY) tests/oracle/compare_dra.py --scenarios $(ORACLE_SCENARIOS) --seed $(ORACLE_SEED)
	$(VENV_PY) tests/oracle/compare_volcano112.py --scenarios $(ORACLE_SCENARIOS) --seed $(ORACLE_SEED)

oracle-speed: python build
	@bash tests/oracle/build.sh
	$(VENV_PY) tests/oracle/compare.py --speed $(ORACLE_SPEED_NODES) \
	  --devshare-speed $(BUILD)/bench/oracle_speed

# devshare and HAMi's own scheduler behind kube-scheduler (and kube-scheduler
# alone), each run in a fresh control plane, the same pods; the scenarios and
# figures are in tests/e2e/run-compare.sh and compare.sh. COMPARE_RUNS picks
# runs (say "storm/devshare storm/hami"; default all), COMPARE_JSON=FILE
# writes the figures as JSON. The extenders' API clients get COMPARE_QPS /
# COMPARE_BURST, high enough that neither is throttled (the qps-default runs:
# client-go's 5 / 10). COMPARE_SIZES (default "200 1000 5000") adds the
# throughput runs at those node counts (2 pods a node) for every scheduler;
# the whole run takes about 65 minutes with the binaries cached, and the DRA
# runs (COMPARE_DRA_SIZES, default "500 1000 5000", and COMPARE_DRA_FILL_SIZES,
# default "1000": kube-scheduler's own DRA allocation against devshare serving
# the DeviceClass by binpack and by fgd; docs/contributors/compare.md) about two
# hours more; empty sizes leave them out.
COMPARE_NODES ?= 50
COMPARE_PODS ?= 200
COMPARE_QPS ?= 1000
COMPARE_BURST ?= 2000
COMPARE_RUNS ?=
COMPARE_JSON ?=
compare: build
	@E2E_BUILD=$(CURDIR)/$(E2E_BUILD) DEVSHARE=$(CURDIR)/$(DEVSHARE) bash tests/e2e/run-compare.sh \
	  $(if $(COMPARE_JSON),--json $(COMPARE_JSON)) \
	  $(COMPARE_NODES) $(COMPARE_PODS) $(COMPARE_QPS) $(COMPARE_BURST) $(COMPARE_RUNS)

# The benchmarks are built with the release build. `make bench` times them;
# `make bench-check` (CI) runs each once and fails on one that reports an
# error, so that none stops compiling or measuring unnoticed.
bench: build python
	@for b in $(BUILD)/bench/*_bench; do $$b --benchmark_min_time=0.5; done
	@$(VENV_PY) bench/python_filter_overhead.py $(BUILD)/bench/filter_bench

bench-check: build
	@$(PYTHON) bench/check.py $(BUILD)

# Plots allocation per policy, fragmentation over demand and the handshake-storm
# latency CDF to PNG (examples/python/plot_simulation.py; PLOT_SEEDS=10 for the
# paper's count).
PLOT_SEEDS ?= 3
plots: python
	$(VENV_PY) -m pip install -q -r scripts/plot-requirements.txt
	$(VENV_PY) examples/python/plot_simulation.py --out $(BUILD)/plots --seeds $(PLOT_SEEDS)

# Fills the openb cluster with each policy from Python (examples/python).
openb: python
	$(VENV_PY) examples/python/openb_fill.py

# How far the openb policies are from optimal (docs/researchers/optimality.md):
# per pod list and seed, random, binpack, fgd, the clairvoyant reference and the
# offline upper bound (an LP solved by HiGHS), with the gap each closes;
# every row in $(BUILD)/openb-bound.json. About 30 CPU-seconds a list and seed.
OPENB_BOUND_LISTS ?= default,gpushare40,multigpu20,gpuspec10,cpu050
OPENB_BOUND_SEEDS ?= 0-9
openb-bound: python
	$(VENV_PY) examples/python/openb_bound.py --lists $(OPENB_BOUND_LISTS) --seeds $(OPENB_BOUND_SEEDS) \
	  --json $(BUILD)/openb-bound.json --markdown

# What the drift auditor's LIST costs on a big cluster: AUDIT_NODES nodes and
# twice as many pods holding devices on the real control plane, then
# AUDIT_RUNS audits through /debug/audit (tests/e2e/audit-cost.sh).
AUDIT_NODES ?= 5000
AUDIT_RUNS ?= 5
audit-cost: build
	@E2E_DIR=$(CURDIR)/$(E2E_BUILD)/audit-cost DEVSHARE=$(CURDIR)/$(DEVSHARE) \
	  bash tests/e2e/control-plane.sh run -- bash tests/e2e/audit-cost.sh $(AUDIT_NODES) $(AUDIT_RUNS)

# devshare serve against a real control plane on loopback (etcd, kube-apiserver,
# kube-scheduler; tests/e2e/README.md); not part of `make test`: the first build
# of the Kubernetes binaries is long, later runs reuse the cache. .ci/run runs it.
e2e: build
	@E2E_BUILD=$(CURDIR)/$(E2E_BUILD) DEVSHARE=$(CURDIR)/$(DEVSHARE) bash tests/e2e/run.sh

# The soak and fault test on the same control plane (tests/e2e/soak.sh): two
# devshare serve replicas under Poisson churn of GPU pods for SOAK_MINUTES on
# SOAK_NODES nodes while faults are injected one after another (watch cut,
# 429/500 answers, leader killed mid-bind, follower stopped past its Lease,
# node re-created, clock step, API server and etcd restarts), the cluster
# recounted from the API objects every minute:
#   make soak SOAK_MINUTES=120 SOAK_NODES=300 [SOAK_SEED=1] [SOAK_FAULTS=a,b]
# The summary is in $(E2E_BUILD)/soak.json (SOAK_JSON). `make e2e` runs a 4-minute one.
SOAK_MINUTES ?= 120
SOAK_NODES   ?= 300
soak: build
	@E2E_BUILD=$(CURDIR)/$(E2E_BUILD) DEVSHARE=$(CURDIR)/$(DEVSHARE) SOAK_MINUTES=$(SOAK_MINUTES) \
	  SOAK_NODES=$(SOAK_NODES) bash tests/e2e/run.sh soak

# devshare serve's DRA allocation under leader kills (tests/e2e/dra-failover.sh):
# two replicas serving hami-gpu, the leader SIGKILLed between one pod's claims,
# then DRA_FAILOVER_PODS pods from templates while the leader is SIGKILLed
# DRA_FAILOVER_KILLS times at random moments (seed DRA_FAILOVER_SEED); no device
# over its capacity, no share in two claims, every pod that fits bound.
DRA_FAILOVER_PODS     ?= 1000
DRA_FAILOVER_KILLS    ?= 5
DRA_FAILOVER_KILL_MAX ?= 12
DRA_FAILOVER_SEED     ?= 1
dra-failover: build
	@E2E_BUILD=$(CURDIR)/$(E2E_BUILD) DEVSHARE=$(CURDIR)/$(DEVSHARE) DRA_FAILOVER_PODS=$(DRA_FAILOVER_PODS) \
	  DRA_FAILOVER_KILLS=$(DRA_FAILOVER_KILLS) DRA_FAILOVER_KILL_MAX=$(DRA_FAILOVER_KILL_MAX) \
	  DRA_FAILOVER_SEED=$(DRA_FAILOVER_SEED) bash tests/e2e/run.sh dra-failover

# The container image as an OCI archive, built without a registry or a daemon
# (scripts/build-image.sh), and its check from its own root file system.
image: build
	@bash scripts/build-image.sh $(IMAGE_DIR) $(BUILD)

test-image: image
	@bash tests/deploy/check_image.sh $(IMAGE_DIR)

clean:
	rm -rf $(BUILD) $(SAN_BUILD) $(E2E_BUILD) $(STAGE) $(VENV) $(PACKAGE_VENV) build-py $(IMAGE_DIR)
	rm -rf build-docs
