# numfuse: the two commands a new user needs.
#   make demo   - install what is missing, build, run the Black-Scholes demo against NumPy
#   make test   - install what is missing, build, run the whole test suite (pytest + C++ units)
#   make fuzz   - a long differential campaign: random NumPy programs under NumPy and numfuse
# Everything is installed by these targets: Debian packages with apt-get,
# Python packages with pip into ./.venv.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
BUILD := build/py
APT_PACKAGES := llvm-19-dev libclang-19-dev libclang-cpp19-dev libomp-19-dev libtbb-dev libopenblas-dev \
                libgtest-dev cmake g++ python3-venv valgrind ccache
# Compiles go through ccache (CMakeLists.txt): paths under the checkout are
# hashed relative to it, so another clone of the same sources hits too.
export CCACHE_BASEDIR := $(CURDIR)
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: demo test build wheel deps system-deps python-deps cpp-test py-test cuda-emulated-test check-test bench fuzz clean

demo: build
	$(VPY) examples/black_scholes.py

test: build wheel
	$(MAKE) --no-print-directory cpp-test check-test py-test

# pytest runs its tests in this many processes (pytest-xdist; "auto": one per core).
PYTEST_WORKERS ?= auto
PYTEST := ../$(VPY) -m pytest -n $(PYTEST_WORKERS)

# The suite once with the core's internal consistency checks on
# (NUMFUSE_CHECKS=1, src/core/checks.h): Task::validate on every recorded
# task, the recorded window structure checked at every flush, the loop IR
# verifier after every lowering pass (lower/passes.h), the multi-stage
# launcher's verifier and LLVM's verifier after numfuse's LLVM passes. The
# same build as the rest of `make test`: the checks are switched at run time.
check-test:
	NUMFUSE_CHECKS=1 $(VPY) -c "import numfuse._core as c; assert c.checks_on(), 'check-test: NUMFUSE_CHECKS=1 did not turn the checks on'"
	cd tests && NUMFUSE_CHECKS=1 $(PYTEST) -q -x -p no:cacheprovider --ignore=test_wheel.py ; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest: no tests collected"; exit 1; fi; exit $$rc

deps: system-deps python-deps

system-deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

$(VPY):
	$(PYTHON) -m venv $(VENV)

python-deps: $(VPY)
	@$(VPY) -c "import numpy, pybind11, scikit_build_core, pytest, hypothesis, scipy, numba, pandas, auditwheel, IPython, nbclient, ipykernel, nbformat, matplotlib, sklearn, xdist" 2>/dev/null || \
	  $(VPY) -m pip install -q --upgrade pip -r requirements-dev.txt

# Builds the extension (incrementally, in $(BUILD)) together with the C++ tests
# and installs it into the virtual environment.
build: deps
	$(VPY) -m pip install -q --no-build-isolation \
	  -Ccmake.define.NUMFUSE_BUILD_TESTS=ON -Cbuild-dir=$(BUILD) .

# A self-contained wheel: the extension (from the same incremental build) with
# the libraries it links -- LLVM, clang, libomp, TBB, OpenBLAS and theirs --
# grafted in by auditwheel and the tag set to the oldest glibc (manylinux)
# they allow. `pip install dist/numfuse-*manylinux*.whl` needs no LLVM on the
# machine (tests/test_wheel.py installs it with the system's hidden).
wheel: deps
	rm -rf dist/raw dist/numfuse-*.whl
	$(VPY) -m pip wheel -q --no-build-isolation --no-deps \
	  -Ccmake.define.NUMFUSE_BUILD_TESTS=ON -Cbuild-dir=$(BUILD) -w dist/raw .
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH $(VENV)/bin/auditwheel repair --strip -w dist dist/raw/numfuse-*.whl
	@ls -l dist/numfuse-*manylinux*.whl

cpp-test:
	cd $(BUILD) && NUMFUSE_CHECKS=1 ctest --output-on-failure -j2

py-test:
	cd tests && $(PYTEST) -q -x --durations=10 ; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest: no tests collected"; exit 1; fi; [ $$rc -eq 0 ] || exit $$rc
	$(MAKE) --no-print-directory cuda-emulated-test

# The CUDA target without a GPU (README: Targets): the differential tests of
# CUDA_TEST_FILES with every kernel compiled for the CUDA target and run on
# the emulated device, each also compiled by NVRTC for sm_80 and sm_90 (a
# compile error or a register spill fails). `make cuda-emulated-test
# CUDA_TEST_FILES=` runs the whole suite so (about an hour on 2 cores).
CUDA_TEST_FILES ?= test_targets.py test_reductions.py test_random_programs.py test_memo_rewrite.py test_aliasing.py
CUDA_CHECK ?= 80,90
cuda-emulated-test:
	cd tests && $(PYTEST) -q -x -p no:cacheprovider --target=cuda-emulated --cuda-check=$(CUDA_CHECK) \
	  $(if $(CUDA_TEST_FILES),$(CUDA_TEST_FILES),--ignore=test_wheel.py) ; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest: no tests collected"; exit 1; fi; exit $$rc

bench: build
	$(VPY) -m pip install -q numexpr numba "jax[cpu]" "dask[array]" matplotlib
	$(VPY) benchmarks/run.py

# Seeded differential fuzzing (tests/fuzz): each program runs under NumPy and
# numfuse (fusion on/off, random schedules, tiny windows, memo off) in worker
# processes with a time limit; prints mismatches, wrong exceptions, crashes and
# hangs with their seeds. Then the cache-directory campaign: damaged, hostile
# and contended cache directories under victim processes that must stay right.
# The test suite runs short slices of both (test_fuzz_slice.py,
# test_cache_campaign_slice.py).
FUZZ_PROGRAMS ?= 100000
FUZZ_CACHE_ROUNDS ?= 400
FUZZ_SEED ?= 0
FUZZ_WORKERS ?= 2
FUZZ_TIMEOUT ?= 20
fuzz: build
	$(VPY) -m tests.fuzz.campaign --programs $(FUZZ_PROGRAMS) --seed $(FUZZ_SEED) \
	  --workers $(FUZZ_WORKERS) --timeout $(FUZZ_TIMEOUT) --report build/fuzz-report.json
	$(VPY) -m tests.fuzz.cache_campaign --rounds $(FUZZ_CACHE_ROUNDS) --seed $(FUZZ_SEED) \
	  --workers $(FUZZ_WORKERS) --report build/cache-campaign-report.json

clean:
	rm -rf build dist $(VENV)
