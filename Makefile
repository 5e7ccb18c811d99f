# Two entry points do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PYTEST_ARGS ?=

.PHONY: setup prereqs jars interop lint typecheck test test-unit test-integration test-e2e demo bench clean

## setup: system prerequisites (JDK 17+, Maven, Go, Node), the venv with every extra, Kafka jars, the Java
## member, and the other client families' test-bed members (interop/: PyPI, Go module proxy, npm; cached)
setup: prereqs $(STAMP) jars interop

prereqs:
	@bash scripts/prereqs.sh

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -c constraints.txt -e '.[dev,spark]'
	touch $(STAMP)

jars: $(STAMP)
	$(BIN)/kafka-coop sandbox prepare
	$(BIN)/kafka-coop prepare-spark
	$(BIN)/python -m kafka_coop.sandbox._toxiproxy

interop: $(STAMP)
	$(BIN)/python -c "from kafka_coop.sandbox._interop import main; main()"

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

## test: the whole suite (lint, types, unit, integration and e2e on a real local Kafka)
test: setup lint typecheck
	$(BIN)/pytest tests/unit tests/integration tests/e2e $(PYTEST_ARGS)

test-unit: $(STAMP)
	$(BIN)/pytest tests/unit $(PYTEST_ARGS)

test-integration: setup
	$(BIN)/pytest tests/integration $(PYTEST_ARGS)

test-e2e: setup
	$(BIN)/pytest tests/e2e $(PYTEST_ARGS)

## bench: every benchmark on a local sandbox (~70 min; the rebalance ones ~45), results in bench/results/*.json + .png, table in
## README.md (regenerated even when a benchmark fails); BENCH_ARGS='--only wrapper_overhead' narrows it.
## compileall first: member processes start like an installed package (pip writes .pyc), not recompiling
## kafka_coop on every restart (~20 ms CPU each; PYTHONDONTWRITEBYTECODE=1 would keep them from caching it)
bench: setup
	$(BIN)/python -m compileall -q kafka_coop cli
	$(BIN)/python -m bench $(BENCH_ARGS); status=$$?; $(BIN)/python -m bench.readme_table && exit $$status

## demo: the main job on the embedded default (a local sandbox broker)
demo: setup
	$(BIN)/kafka-coop demo

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
