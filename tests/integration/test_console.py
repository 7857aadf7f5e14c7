"""The operator console (`memgate`, app/console.py) run as the installed console script,
a subprocess of the test, against the test's PostgreSQL and Redis (README.md#operator-console).

No socket of the API: the console calls the services itself. The test's own writes and
reads go through the in-process ASGI transport (`client`); `jobs wait` waits on a job that
a real arq worker runs in this event loop (tests/integration/test_pipeline.py's harness).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import Stack, Tenant
from tests.integration.test_pipeline import running_worker

MEMGATE = Path(sys.executable).with_name("memgate")


async def memgate(stack: Stack, *args: str) -> tuple[int, str, str]:
    """Run `memgate ARGS`: (exit status, stdout, stderr)."""
    env = {
        **os.environ,
        "DATABASE_URL": stack.database_url,
        "REDIS_URL": stack.redis_url,
        "MEMGATE_CRON": "0",
        "COLUMNS": "200",
    }
    proc = await asyncio.create_subprocess_exec(
        str(MEMGATE),
        *args,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def memgate_json(stack: Stack, *args: str) -> Any:
    code, out, err = await memgate(stack, *args, "--json")
    assert code == 0, err
    return json.loads(out)


async def write(client: httpx.AsyncClient, t: Tenant, user: str, statement: str) -> str:
    r = await client.post(
        f"/v1/users/{user}/facts",
        headers=t.h(),
        json={"type": "semantic", "statement": statement, "source": {"kind": "user_message"}},
    )
    assert r.status_code == 201, r.text
    return str(r.json()["fact"]["id"])


async def test_views_show_the_tenants_data_and_no_secret(
    client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant, migrated: Stack
) -> None:
    u = f"u-{uuid.uuid4().hex[:8]}"
    mine = await write(client, tenant, u, "The user's favourite tea is jasmine green tea")
    await write(client, other_tenant, u, "The user drives a red tractor")

    # the wrapped CLI: its last line of stdout is still the answer
    name = f"console-{uuid.uuid4().hex[:8]}"
    code, out, err = await memgate(migrated, "create-tenant", name)
    assert code == 0, err
    created = uuid.UUID(out.strip().splitlines()[-1])

    # independent reads: run side by side (each process mostly loads the app)
    tenants, keys, facts, typed, found, dry = await asyncio.gather(
        memgate(migrated, "tenants", "list"),
        memgate(migrated, "keys", "list", "--tenant", tenant.name),
        memgate(migrated, "facts", "list", "--tenant", tenant.name, "--user", u, "--json"),
        memgate(
            migrated, "facts", "list", "--tenant", str(tenant.id), "--user", u, "--type", "semantic"
        ),
        memgate(
            migrated,
            "recall",
            "--tenant",
            tenant.name,
            "--user",
            u,
            "which tea do I like?",
            "--json",
        ),
        memgate(migrated, "cleanup", "--tenant", tenant.name, "--dry-run", "--user", u, "--json"),
    )
    for code, _, err in (tenants, keys, facts, typed, found, dry):
        assert code == 0, err

    table = tenants[1]
    assert tenant.name in table and str(tenant.id) in table
    assert name in table and str(created) in table

    assert all(role in keys[1] for role in ("agent", "ops", "admin"))
    for secret in tenant.keys.values():  # the key is never shown
        assert secret not in keys[1]

    items = json.loads(facts[1])["items"]
    assert [f["id"] for f in items] == [mine]  # not the other tenant's
    assert "jasmine" in typed[1] and "tractor" not in typed[1]

    recalled = json.loads(found[1])
    assert [f["id"] for f in recalled["facts"]][:1] == [mine]
    assert "tractor" not in found[1]

    assert json.loads(dry[1]) == {
        "dry_run": True,
        "action": "delete",
        "total": 1,
        "by_user": {u: 1},
    }
    left = await client.get(f"/v1/users/{u}/facts", headers=tenant.h())
    assert [f["id"] for f in left.json()["items"]] == [mine]  # the dry run deleted nothing


async def test_bad_input_is_a_clear_error_and_a_non_zero_exit(
    client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant, migrated: Stack
) -> None:
    # a job of another tenant is "no job" when a tenant is named
    r = await client.post("/v1/ops/purge", headers=other_tenant.h("ops"))
    assert r.status_code == 202, r.text
    cases: list[tuple[list[str], int, str]] = [
        (["facts", "list", "--tenant", "no-such-tenant", "--user", "u"], 1, "no tenant"),
        (["cleanup", "--tenant", tenant.name], 1, "--dry-run"),
        (["jobs", "show", r.json()["job_id"], "--tenant", tenant.name], 1, "no job"),
        (["facts", "list", "--tenant", tenant.name, "--user", "u", "--type", "x"], 2, "invalid"),
    ]
    answers = await asyncio.gather(*(memgate(migrated, *args) for args, _, _ in cases))
    for (args, status, message), (code, out, err) in zip(cases, answers, strict=True):
        assert (code, out) == (status, ""), (args, code, out, err)
        assert message in err and "Traceback" not in err, (args, err)


async def test_purge_then_jobs_wait_shows_done_of_total(
    client: httpx.AsyncClient, tenant: Tenant, app: Any, migrated: Stack
) -> None:
    u = f"u-{uuid.uuid4().hex[:8]}"
    for n in range(3):
        fact = await write(client, tenant, u, f"The user keeps bees in hive number {n}")
        r = await client.delete(f"/v1/users/{u}/facts/{fact}", headers=tenant.h())
        assert r.status_code == 200, r.text
    queued = await memgate_json(migrated, "purge", "--tenant", tenant.name)
    job_id = queued["job_id"]
    async with running_worker(app.state.ctx):
        job = await memgate_json(migrated, "jobs", "wait", job_id, "--interval", "0.1")
    assert job["state"] == "done" and job["kind"] == "purge"
    assert job["result"] == {"total": 3, "done": 3}
    code, table, _ = await memgate(migrated, "jobs", "show", job_id, "--tenant", tenant.name)
    assert code == 0 and "purge" in table and "done" in table and "3/3" in table


async def test_stored_text_is_printed_as_text_never_as_markup_or_escapes(
    client: httpx.AsyncClient, tenant: Tenant, migrated: Stack
) -> None:
    """A fact's statement is whatever an agent or user sent: in a table it must neither
    drive the terminal (escape sequences), render as rich markup (a hidden link), nor
    crash the view (an unbalanced closing tag)."""
    u = f"u-{uuid.uuid4().hex[:8]}"
    # (a link to a host named "evil" is refused by the gate's semantic injection class)
    await write(
        client, tenant, u, "My favourite kite shop is [link=https://kites.example]Blue Sky[/link]"
    )
    await write(client, tenant, u, "The user writes the closing tag [/b] in notes")
    await write(client, tenant, u, "The user's terminal shows \x1b]0;pwned\x07\x1b[2J colours")
    code, out, err = await memgate(migrated, "facts", "list", "--tenant", tenant.name, "--user", u)
    assert code == 0, err
    assert "[link=https://kites.example]Blue Sky[/link]" in out
    assert "[/b]" in out
    assert "\x1b" not in out and "\x07" not in out
