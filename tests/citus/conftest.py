"""tests/citus runs only against a Citus cluster (`make test-citus`: MEMGATE_CITUS_WORKERS=2);
under `make test` nothing here is collected."""

from __future__ import annotations

from app.embedded import citus_workers_from_env

collect_ignore_glob = [] if citus_workers_from_env() else ["test_*.py"]
