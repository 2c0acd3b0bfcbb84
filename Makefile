# The two commands of the README: `make demo` and `make test`. Each installs what it
# needs (Debian packages via apt, Python packages via pip), builds, and runs.

APT_PACKAGES := g++ libeigen3-dev libcli11-dev nlohmann-json3-dev libzip-dev libgtest-dev libbenchmark-dev pkg-config graphviz libopenmpi-dev openmpi-bin libmetis-dev libmimalloc-dev
PIP_PACKAGES := cmake ninja nanobind scikit-build-core numpy pytest tqdm
PYTHON ?= python3
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
GENERATOR := $(shell command -v ninja >/dev/null 2>&1 && echo "-G Ninja")
# ccache makes rebuilds in several checkouts (worktrees, CI clones) cheap, and lets the
# Python extension reuse the library objects `make build` compiled (test-python). It is
# looked up when a recipe runs ($$), after deps-apt may have installed it.
APT_PACKAGES += ccache
LAUNCHER = $$(command -v ccache >/dev/null 2>&1 && echo "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache")

# -march=native for the binaries `make` builds and runs here (2-4x faster dense products);
# `cmake --install` and `pip install .` build portable binaries unless asked (README).
NATIVE ?= ON

.PHONY: all deps deps-apt deps-pip configure build demo test test-cpp test-python test-sanitize test-tsan fuzz fuzz-build bench clean

all: build

deps: deps-apt deps-pip

deps-apt:
	@missing=""; for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

deps-pip:
	@$(PYTHON) -c "import nanobind, scikit_build_core, numpy, pytest, tqdm" 2>/dev/null && command -v cmake >/dev/null || \
	  $(PYTHON) -m pip install -q $(PIP_PACKAGES)

configure: deps
	cmake -S . -B $(BUILD) $(GENERATOR) $(LAUNCHER) -DCMAKE_BUILD_TYPE=Release -DLRNN_NATIVE=$(NATIVE)

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# The demo runs the lrnn command only: the tests and benchmarks are left to `make build`.
demo: configure
	cmake --build $(BUILD) -j $(JOBS) --target lrnn
	./scripts/demo.sh $(BUILD)

test: build
	cd $(BUILD) && ctest --output-on-failure
	@# Every parser and the whole pipeline under libFuzzer + ASan + UBSan: a fixed seed and a
	@# fixed number of inputs, so the run is the same everywhere (`make fuzz` runs longer).
	$(MAKE) --no-print-directory fuzz-build > $(BUILD)/fuzz-build.log 2>&1 || { tail -30 $(BUILD)/fuzz-build.log; exit 1; }
	FUZZ_RUNS=$(FUZZ_SMOKE_RUNS) ./scripts/fuzz.sh $(BUILD)-fuzz 0
	@if [ -d tests/python ] && ls tests/python/test_*.py >/dev/null 2>&1; then $(MAKE) --no-print-directory test-python; fi

test-python: deps
	@# No build isolation: the build tools deps-pip installed are used in place, so the
	@# cached build directory (build-python-*) stays valid and a re-install only relinks.
	@# PyTorch is the numeric reference of the parity tests (never an engine dependency);
	@# 2.13.0 installs from a local file.
	@$(PYTHON) -c "import torch" 2>/dev/null || $(PYTHON) -m pip install -q torch==2.13.0
	@# torch_geometric: the reference of the PyG-layer tests, and the DataLoader of
	@# examples/python/torch_layers.py (docs/torch_layers.md runs it).
	@$(PYTHON) -c "import torch_geometric" 2>/dev/null || $(PYTHON) -m pip install -q torch_geometric==2.8.1
	@# scikit-learn: its bundled 8x8 digits are the images of the neuro-symbolic examples,
	@# which docs/neurosymbolic.md runs (and so test_docs.py does).
	@$(PYTHON) -c "import sklearn" 2>/dev/null || $(PYTHON) -m pip install -q scikit-learn
	@# Headless Chromium opens the training report in a real browser (its test is skipped,
	@# saying so, where the package cannot be installed).
	@command -v chromium >/dev/null || { $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium > /dev/null; } || \
	  echo "chromium could not be installed: the browser test of the report will be skipped"
	@# The extension's library is compiled as `make build` compiles it (LRNN_NATIVE, and the
	@# same compiler: ccache tells c++ from g++), so ccache serves those objects instead of
	@# compiling the library a second time.
	compiler=$$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' $(BUILD)/CMakeCache.txt 2>/dev/null); \
	CMAKE_CXX_COMPILER_LAUNCHER=$$(command -v ccache) $(PYTHON) -m pip install -q --no-build-isolation \
	  -C cmake.define.LRNN_NATIVE=$(NATIVE) $${compiler:+-C cmake.define.CMAKE_CXX_COMPILER=$$compiler} . && \
	  $(PYTHON) -m pytest -q tests/python

# The unit, golden and CLI tests under AddressSanitizer + UndefinedBehaviorSanitizer (leak
# checks on): any report fails the run.
test-sanitize: deps
	cmake -S . -B $(BUILD)-sanitize $(GENERATOR) $(LAUNCHER) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLRNN_SANITIZE=ON -DLRNN_BUILD_BENCH=OFF
	cmake --build $(BUILD)-sanitize -j $(JOBS)
	@# distributed: LeakSanitizer reports Open MPI's own allocations (strdup in its
	@# libraries) as leaks in every rank, so the MPI test runs in `make test` only.
	cd $(BUILD)-sanitize && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -E 'demo|install|distributed'

# The tests that use one model, program or dataset from several threads at once, under
# ThreadSanitizer (include/lrnn/model.hpp "Threads"). OpenMP stays on one thread: libgomp is
# not instrumented, so its own synchronisation would be reported as races.
TSAN_TESTS ?= TrainApi.Two*:LogicGrounding.ConcurrentGroundingOfOneProgramIsSafe:LogicMutagenesis.GroundManyOnTwoThreads*:MemoryBudget.Concurrent*
test-tsan: deps
	cmake -S . -B $(BUILD)-tsan $(GENERATOR) $(LAUNCHER) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLRNN_TSAN=ON -DLRNN_BUILD_BENCH=OFF
	cmake --build $(BUILD)-tsan -j $(JOBS) --target lrnn_tests
	OMP_NUM_THREADS=1 TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 $(BUILD)-tsan/tests/lrnn_tests --gtest_filter='$(TSAN_TESTS)'

# libFuzzer targets (clang), one per parser plus the whole pipeline, FUZZ_SECONDS each.
FUZZ_SECONDS ?= 600
FUZZ_SMOKE_RUNS ?= 5000
fuzz-build: deps
	@dpkg-query -W -f='$${Status}' libclang-rt-14-dev 2>/dev/null | grep -q 'install ok installed' && command -v clang++ >/dev/null || \
	  { $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	    $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang libclang-rt-14-dev; }
	cmake -S . -B $(BUILD)-fuzz $(GENERATOR) $(LAUNCHER) -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DLRNN_FUZZ=ON -DLRNN_BUILD_TESTS=OFF -DLRNN_BUILD_BENCH=OFF -DLRNN_BUILD_CLI=OFF
	cmake --build $(BUILD)-fuzz -j $(JOBS)

fuzz: fuzz-build
	./scripts/fuzz.sh $(BUILD)-fuzz $(FUZZ_SECONDS)

bench: build
	./scripts/bench.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(BUILD)-sanitize $(BUILD)-tsan $(BUILD)-fuzz build-python-*
