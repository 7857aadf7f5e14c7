"""The README's "Python SDK" agent loop, run as it is against the live uvicorn on a
loopback socket (the `live` fixture)."""

from __future__ import annotations

import re
from pathlib import Path

import asyncpg
import pytest

from tests.conftest import Live, Tenant

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_snippet() -> str:
    section = README.read_text().split("\n## Python SDK\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    assert len(blocks) == 1
    return blocks[0]


async def test_readme_agent_loop_runs(
    live: Live,
    tenant: Tenant,
    owner_db: asyncpg.Pool,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = readme_snippet()
    assert len([line for line in code.splitlines() if line.strip()]) <= 12  # short
    monkeypatch.setenv("MEMGATE_URL", live.url)
    monkeypatch.setenv("MEMGATE_KEY", tenant.keys["agent"])
    exec(compile(code, str(README), "exec"), {"__name__": "readme"})
    assert capsys.readouterr().out.splitlines() == ["Noted.", "Noted."]
    queued = await owner_db.fetchval(
        "SELECT count(*) FROM jobs WHERE tenant_id = $1 AND user_id = 'u1024' AND kind = 'observe'",
        tenant.id,
    )
    assert queued == 2  # one observation per turn, each handed to the worker
