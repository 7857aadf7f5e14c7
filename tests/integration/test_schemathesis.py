"""schemathesis with every check against the live server, once per kind of credential:
0 server errors, 0 schema violations (issue 21 §3).

Bounded: a fixed seed, few examples per operation, no example database, so a run is
deterministic and takes well under a minute per credential on two cores.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import asyncpg
import pytest

from tests.conftest import Live, make_tenant

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "openapi" / "openapi.json"
CONFIG = ROOT / "tests" / "schemathesis" / "schemathesis.toml"
MAX_EXAMPLES = int(os.environ.get("MEMGATE_SCHEMATHESIS_EXAMPLES", "10"))
CREDENTIALS = ["agent", "ops", "admin", "scoped", "user"]


@pytest.fixture(scope="module")
async def credentials(owner_db: asyncpg.Pool, live: Live) -> dict[str, str]:
    tenant = await make_tenant(owner_db, scoped={"role": "agent", "scopes": ["project:alpha"]})
    async with live.client() as c:
        minted = await c.post("/v1/users/u1/tokens", json={}, headers=tenant.h())
        assert minted.status_code == 201, minted.text
    return {**tenant.keys, "user": minted.json()["token"]}


@pytest.mark.parametrize("kind", CREDENTIALS)
def test_schemathesis_all_checks(
    kind: str, credentials: dict[str, str], live: Live, tmp_path: Path
) -> None:
    binary = Path(sys.executable).parent / "schemathesis"
    report = tmp_path / "report.json"
    started = time.monotonic()
    proc = subprocess.run(
        [
            str(binary),
            "--config-file",
            str(CONFIG),
            "run",
            str(SCHEMA),
            "--url",
            live.url,
            "--checks",
            "all",
            "--header",
            f"Authorization: Bearer {credentials[kind]}",
            "--max-examples",
            str(MAX_EXAMPLES),
            "--seed",
            "21",
            "--generation-database",
            "none",
            "--workers",
            "1",
            "--request-timeout",
            "30",
            "--no-color",
            "--report",
            "json",
            "--report-json-path",
            str(report),
        ],
        capture_output=True,
        text=True,
        timeout=280,
        cwd=tmp_path,
        env={
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "SCHEMATHESIS_HOOKS": "tests.schemathesis.hooks",
        },
    )
    elapsed = time.monotonic() - started
    print(f"schemathesis[{kind}] {elapsed:.1f}s\n{proc.stdout}\n{proc.stderr[-3000:]}")
    summary = proc.stdout[proc.stdout.rfind("SUMMARY") :]
    assert proc.returncode == 0, summary[-3000:]
    if report.exists():
        print(json.dumps(json.loads(report.read_text()).get("summary", {}))[:2000])
