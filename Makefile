# Two entry points do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PYTEST_ARGS ?=
# The suite mostly waits on brokers and member processes (a serial run: ~20 min wall, ~6 min CPU), so
# `make test` runs it on 3 pytest-xdist workers, each with its own session broker; tests that share
# expensive session state (the install tier's wheel and venvs) are grouped onto one worker.
PYTEST_WORKERS ?= 3
# The order work reaches the workers: pytest-xdist (loadgroup) hands out the grouped modules first, then
# the ungrouped tests in collection order. Collected last, the long e2e walks were the last work handed
# out and left workers idle at the end (157 s of a 1,861 s run; 32 s with this order); the thousands of
# short unit tests now come last and fill the gaps.
SUITE_ORDER := tests/install tests/e2e tests/integration tests/differential tests/unit

.PHONY: setup setup-demo prereqs prereqs-jdk sandbox-jars jars interop lint typecheck test test-unit \
	test-integration test-e2e test-install soak demo bench dist clean

## setup: everything `make test` needs: system prerequisites (JDK 17+, Maven, Go, Node), the venv with
## every extra, Kafka jars, the Java member, the Spark engine's parts, toxiproxy, and the other client
## families' test-bed members (testbed/interop/: PyPI, Go module proxy, npm; cached)
setup: prereqs $(STAMP) jars interop

# Toolchains are checked (and installed, with apt-get) one mode after the other, never two apt-gets at once.
prereqs: prereqs-jdk

## setup-demo: only what `make demo` needs: a JDK and Maven, a venv of its own with the command (`.[cli]`:
## not the dev toolchain: no PySpark, pyarrow, matplotlib, test or lint tools) and the Kafka jars
## (not the Java member, which only the tests use)
DEMO_VENV ?= .venv-demo
DEMO_STAMP := $(DEMO_VENV)/.installed-stamp
setup-demo: prereqs-jdk $(DEMO_STAMP)
	$(DEMO_VENV)/bin/kafka-coop sandbox prepare --no-java-member

$(DEMO_STAMP): pyproject.toml constraints.txt setup.py
	$(PYTHON) -m venv $(DEMO_VENV)
	$(DEMO_VENV)/bin/pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[cli]'
	touch $(DEMO_STAMP)

prereqs:
	@bash scripts/prereqs.sh testbed

prereqs-jdk:
	@bash scripts/prereqs.sh jdk

$(STAMP): pyproject.toml constraints.txt setup.py kafka_coop/consumer/_fastcall.c
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# KAFKA_COOP_BUILD_C=1: the checkout must build the C poll path (no silent fallback), so the suite covers both paths
	KAFKA_COOP_BUILD_C=1 $(BIN)/pip install --quiet -c constraints.txt -e '.[dev]'
	touch $(STAMP)

# the default release (4.4.0), then the cross-version lane's (tests/integration/test_cross_version.py,
# test_kafka3_brokers.py): their jars come from Maven Central once, ~45 MB each
LANE_KAFKA := 3.7.2 3.8.1 3.9.0 4.0.0 4.1.1 4.2.0
sandbox-jars: $(STAMP) prereqs-jdk
	$(BIN)/kafka-coop sandbox prepare
	for v in $(LANE_KAFKA); do $(BIN)/kafka-coop sandbox prepare --kafka-version $$v || exit 1; done

# after sandbox-jars: the two Maven builds share ~/.m2, which is not safe for two writers at once
jars: sandbox-jars
	$(BIN)/kafka-coop prepare-spark
	$(BIN)/python -m testbed.faults

interop: $(STAMP) prereqs
	$(BIN)/python -m testbed.interop

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

## test: the whole suite (lint, types, unit, integration and e2e on a real local Kafka, and the install
## tier: the wheel built, installed in fresh venvs and run from outside the checkout, plus the min lane)
## The set-up lanes (Maven and the Spark parts; the Go, Node and Python members; lint and types) run side
## by side: set-up, lint and types took 318 s on a fresh 2-core machine, where set-up alone, one step
## after the other, had taken 325 s.
## compileall: PYTHONDONTWRITEBYTECODE=1 (set on CI machines) keeps Python from caching the checkout's
## bytecode, so every CLI and member process the suite starts compiled kafka_coop again (~0.15 s of CPU
## per CLI start, hundreds of starts); an installed package has its .pyc, and so does the checkout now.
test:
	$(MAKE) --no-print-directory -j3 --output-sync=target setup lint typecheck
	$(BIN)/python -m compileall -q kafka_coop cli testbed tests
	$(BIN)/pytest $(SUITE_ORDER) -n $(PYTEST_WORKERS) --dist loadgroup $(PYTEST_ARGS)

## test-unit: the fast lane (63 s wall on a 2-core box at load average 2-2.5, measured): no broker, no JVM,
## no PySpark (`-m "not spark"`)
test-unit: $(STAMP)
	$(BIN)/pytest tests/unit -m "not spark" $(PYTEST_ARGS)

test-integration: setup
	$(BIN)/pytest tests/integration $(PYTEST_ARGS)

test-e2e: setup
	$(BIN)/pytest tests/e2e $(PYTEST_ARGS)

test-install: setup
	$(BIN)/pytest tests/install -n 2 --dist loadgroup $(PYTEST_ARGS)

## soak: the differential harness (tests/differential: kafka-coop against confluent-kafka) on generated
## programs for SOAK_MINUTES (default 10) on a sandbox of its own; prints each program, each failure
## shrunk to a literal for tests/differential/regressions.py, and the rate in programs per minute; with
## commits under network faults (toxiproxy, testbed/faults.py) unless SOAK_NETWORK=0
soak: $(STAMP)
	SOAK_MINUTES=$${SOAK_MINUTES:-10} $(BIN)/python -m tests.differential.soak

## bench: every benchmark on a local sandbox (~70 min; the rebalance ones ~45), results in bench/results/*.json + .png, table in
## README.md (regenerated even when a benchmark fails); BENCH_ARGS='--only wrapper_overhead' narrows it.
## compileall first: member processes start like an installed package (pip writes .pyc), not recompiling
## kafka_coop on every restart (~20 ms CPU each; PYTHONDONTWRITEBYTECODE=1 would keep them from caching it)
bench: setup
	$(BIN)/python -m compileall -q kafka_coop cli
	$(BIN)/python -m bench $(BENCH_ARGS); status=$$?; $(BIN)/python -m bench.readme_table && exit $$status

## demo: the main job on the embedded default (a local sandbox broker); needs only Python, a JDK and Maven.
## PORT=19092 (and CONTROLLER_PORT=...) choose the sandbox's ports; default 9092, or a free one if taken.
PORT ?=
CONTROLLER_PORT ?=
demo: setup-demo
	$(DEMO_VENV)/bin/kafka-coop demo $(if $(PORT),--port $(PORT)) $(if $(CONTROLLER_PORT),--controller-port $(CONTROLLER_PORT))

## dist: what a release uploads, in dist/: the sdist, the compiled wheel (the C poll path, cp311-abi3,
## manylinux) and the pure-Python fallback wheel (scripts/build_dist.py; docs/install.md)
dist: setup
	rm -rf dist
	$(BIN)/python scripts/build_dist.py --outdir dist

clean:
	rm -rf $(VENV) $(DEMO_VENV) .mypy_cache .ruff_cache .pytest_cache
