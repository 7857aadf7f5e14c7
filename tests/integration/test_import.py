"""Bulk import (docs/api.md#bulk-import): `POST /v1/users/{u}/facts:batch` and
`POST /v1/admin/import` (generic JSONL and mem0's export), against real PostgreSQL,
Redis and a worker."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from arq.worker import Worker

from tests.conftest import Tenant
from tests.integration.test_pipeline import facts_of, running_worker, wait_job

MEM0_EXPORT = Path(__file__).resolve().parents[1] / "data" / "import" / "mem0-export.json"
AWS_KEY = "AKIAZ7Q3X5M2N8P4R6TB"
OPENAI_KEY = "sk-proj-Xq7vR2mN9pL4tY8wK3zB6cF1hJ5dG0sA"
SSN = "536-22-8411"
SECRETS = (AWS_KEY, OPENAI_KEY, SSN)


@pytest.fixture
async def worker(app: Any) -> AsyncIterator[Worker]:
    async with running_worker(app.state.ctx) as w:
        yield w


def fact(statement: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": "semantic",
        "statement": statement,
        "source": {"kind": "user_message"},
        **extra,
    }


def pref(value: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": "profile",
        "predicate": "preferred_language",
        "value": value,
        "statement": f"The user prefers {value} for answers",
        "source": {"kind": "user_message"},
        **extra,
    }


async def batch(
    client: httpx.AsyncClient,
    tenant: Tenant,
    user: str,
    items: list[dict[str, Any]],
    *,
    dry_run: bool = False,
    **headers: str,
) -> httpx.Response:
    return await client.post(
        f"/v1/users/{user}/facts:batch",
        json={"items": items, "dry_run": dry_run},
        headers=tenant.h(**headers),
    )


async def table_counts(owner_db: asyncpg.Pool, tenant: Tenant) -> dict[str, int]:
    async with owner_db.acquire() as conn:
        return {
            table: int(
                await conn.fetchval(f"SELECT count(*) FROM {table} WHERE tenant_id = $1", tenant.id)
            )
            for table in ("facts", "candidates", "audit_events", "jobs")
        }


async def tenant_text(owner_db: asyncpg.Pool, tenant: Tenant) -> str:
    """Everything the tenant's rows hold, as text: where a secret must not rest."""
    async with owner_db.acquire() as conn:
        parts = []
        for table in ("facts", "candidates", "audit_events", "jobs", "idempotency"):
            rows = await conn.fetch(
                f"SELECT to_jsonb(t)::text AS row FROM {table} t WHERE tenant_id = $1", tenant.id
            )
            parts.extend(r["row"] for r in rows)
    return "\n".join(parts)


# ------------------------------------------------------------------------- facts:batch


async def test_a_secret_at_item_3_refuses_item_3_only(
    client: httpx.AsyncClient, tenant: Tenant, owner_db: asyncpg.Pool
) -> None:
    items = [
        fact("The user prefers dark mode in every editor"),
        fact("The user works on the payments team"),
        fact(f"The user's AWS key is {AWS_KEY}"),
        fact("The user likes answers with code examples"),
        fact("The user deploys with Kubernetes"),
    ]
    res = await batch(client, tenant, "b1", items)
    assert res.status_code == 200, res.text
    body = res.json()
    assert [i["index"] for i in body["items"]] == [0, 1, 2, 3, 4]
    assert [i["decision"] for i in body["items"]] == [
        "written",
        "written",
        "rejected",
        "written",
        "written",
    ]
    assert body["items"][2]["reason"] == "secret_detected"
    assert "fact" not in body["items"][2]
    assert body["summary"] == {
        "written": 4,
        "superseded": 0,
        "merged": 0,
        "pending": 0,
        "rejected": 1,
    }
    stored = {f["statement"] for f in await facts_of(client, tenant, "b1")}
    assert stored == {items[n]["statement"] for n in (0, 1, 3, 4)}
    assert {i["fact"]["id"] for n, i in enumerate(body["items"]) if n != 2} == {
        f["id"] for f in await facts_of(client, tenant, "b1")
    }
    assert AWS_KEY not in await tenant_text(owner_db, tenant)
    async with owner_db.acquire() as conn:  # every item is audited, the refusal too
        audited = await conn.fetch(
            "SELECT decision FROM audit_events WHERE tenant_id = $1 AND user_id = 'b1'",
            tenant.id,
        )
    assert sorted(r["decision"] for r in audited) == ["rejected"] + ["written"] * 4


async def test_a_retried_batch_writes_nothing_twice(
    client: httpx.AsyncClient, tenant: Tenant, owner_db: asyncpg.Pool
) -> None:
    items = [fact("The user reads Hacker News daily"), pref("Chinese")]
    first = await batch(client, tenant, "b2", items, **{"Idempotency-Key": "batch-1"})
    assert first.status_code == 200, first.text
    before = await table_counts(owner_db, tenant)
    again = await batch(client, tenant, "b2", items, **{"Idempotency-Key": "batch-1"})
    assert again.status_code == 200
    assert again.headers.get("idempotent-replayed") == "true"
    assert again.json() == first.json()
    assert await table_counts(owner_db, tenant) == before
    assert len(await facts_of(client, tenant, "b2")) == 2
    # another body under the same key is refused, writing nothing
    other = await batch(client, tenant, "b2", [fact("x y z")], **{"Idempotency-Key": "batch-1"})
    assert other.status_code == 409 and other.json()["error"]["code"] == "idempotency_conflict"
    assert await table_counts(owner_db, tenant) == before


async def test_conflicting_values_in_one_batch_resolve_in_order(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    res = await batch(client, tenant, "b3", [pref("Chinese"), pref("English"), pref("French")])
    assert res.status_code == 200, res.text
    items = res.json()["items"]
    assert [i["decision"] for i in items] == ["written", "superseded", "superseded"]
    assert items[1]["superseded"] == [items[0]["fact"]["id"]]
    assert items[2]["superseded"] == [items[1]["fact"]["id"]]
    [active] = await facts_of(client, tenant, "b3")
    assert active["value"] == "French" and active["id"] == items[2]["fact"]["id"]
    history = await client.get(f"/v1/users/b3/facts/{active['id']}/history", headers=tenant.h())
    assert [v["value"] for v in history.json()["items"]] == ["Chinese", "English", "French"]


async def test_dry_run_writes_nothing(
    client: httpx.AsyncClient, tenant: Tenant, owner_db: asyncpg.Pool
) -> None:
    before = await table_counts(owner_db, tenant)
    items = [fact("The user prefers vim keybindings"), fact(f"my key is {OPENAI_KEY}")]
    res = await batch(client, tenant, "b4", items, dry_run=True)
    assert res.status_code == 200, res.text
    body = res.json()
    assert body["dry_run"] is True
    assert [i["decision"] for i in body["items"]] == ["pass", "rejected"]
    assert body["items"][1]["reason"] == "secret_detected"
    assert body["summary"]["pass"] == 1 and body["summary"]["rejected"] == 1
    assert await table_counts(owner_db, tenant) == before
    assert OPENAI_KEY not in await tenant_text(owner_db, tenant)


async def test_batch_limits_and_malformed_items(
    client: httpx.AsyncClient, tenant: Tenant, owner_db: asyncpg.Pool
) -> None:
    before = await table_counts(owner_db, tenant)
    over = await batch(client, tenant, "b5", [fact(f"The user likes tea {n}") for n in range(501)])
    assert over.status_code == 413 and over.json()["error"]["code"] == "payload_too_large"
    empty = await batch(client, tenant, "b5", [])
    assert empty.status_code == 422
    bad = await batch(client, tenant, "b5", [fact("fine"), {"type": "semantic"}])
    assert bad.status_code == 422 and bad.json()["error"]["code"] == "invalid_request"
    locs = [f["loc"] for f in bad.json()["error"]["details"]["fields"]]
    assert ["body", "items", "1", "statement"] in locs
    long = await batch(client, tenant, "b5", [fact("ok"), fact("x" * 501)])
    assert long.status_code == 413
    assert long.json()["error"]["details"]["fields"][0]["loc"] == ["body", "items", 1, "statement"]
    assert await table_counts(owner_db, tenant) == before


async def test_batch_stays_in_its_tenant(
    client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
) -> None:
    res = await batch(client, tenant, "shared", [fact("The user prefers light mode")])
    assert res.status_code == 200 and res.json()["items"][0]["decision"] == "written"
    assert await facts_of(client, other_tenant, "shared") == []
    theirs = await batch(client, other_tenant, "shared", [fact("The user prefers light mode")])
    assert theirs.json()["items"][0]["decision"] == "written"  # not merged with the other's
    assert theirs.json()["items"][0]["fact"]["id"] != res.json()["items"][0]["fact"]["id"]
    assert len(await facts_of(client, tenant, "shared")) == 1


# ------------------------------------------------------------------------------ import


def ndjson(docs: list[Any]) -> bytes:
    return b"\n".join(json.dumps(d).encode() for d in docs) + b"\n"


async def post_import(
    client: httpx.AsyncClient, tenant: Tenant, body: bytes, **params: str
) -> httpx.Response:
    return await client.post(
        "/v1/admin/import",
        params=params,
        content=body,
        headers=tenant.h("admin", **{"Content-Type": "application/x-ndjson"}),
    )


def mem0_results() -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = json.loads(MEM0_EXPORT.read_text())["results"]
    return results


async def test_mem0_export_imports_with_its_secrets_refused(
    client: httpx.AsyncClient, tenant: Tenant, owner_db: asyncpg.Pool, worker: Worker
) -> None:
    memories = mem0_results()
    res = await post_import(client, tenant, ndjson(memories), format="mem0")
    assert res.status_code == 202, res.text
    assert res.json()["total"] == 20 and res.json()["format"] == "mem0"
    job = await wait_job(client, tenant, res.json()["job_id"])
    assert job["state"] == "done" and job["kind"] == "import"
    refused = {
        memories[6]["id"]: "secret_detected",  # the AWS key
        memories[11]["id"]: "government_id",  # the SSN
        memories[14]["id"]: "secret_detected",  # the OpenAI key
    }
    report = {d["id"]: d for d in job["decisions"]}
    assert [d["line"] for d in job["decisions"]] == list(range(1, 21))
    assert set(report) == {m["id"] for m in memories}
    for m in memories:
        entry = report[m["id"]]
        assert entry["user_id"] == m["user_id"]
        if m["id"] in refused:
            assert (entry["decision"], entry["reason"]) == ("rejected", refused[m["id"]])
            assert "fact_id" not in entry
        else:
            assert entry["decision"] == "written", (m["memory"], entry)
    assert job["result"]["done"] == job["result"]["total"] == 20
    assert job["result"]["counts"] == {
        "written": 17,
        "superseded": 0,
        "merged": 0,
        "pending": 0,
        "rejected": 3,
    }
    # the facts keep mem0's ids and hashes, as source kind imported with the policy's confidence
    facts = await facts_of(client, tenant, "alice") + await facts_of(client, tenant, "bob")
    assert len(facts) == 17
    by_id = {f["source"]["turn_id"]: f for f in facts}
    assert all(f["source"]["evidence"] is None for f in facts)
    for m in memories:
        if m["id"] in refused:
            continue
        f = by_id[f"mem0:{m['id']}#{m['hash']}"]
        assert f["statement"] == m["memory"] and f["type"] == "semantic"
        assert f["source"]["kind"] == "imported" and f["confidence"] == 0.6
        assert f["source"]["trace_id"] == f"import:{job['id']}"
        assert report[m["id"]]["fact_id"] == f["id"]
    # the secrets rest nowhere: not in facts, audit, the job's report or payload
    text = await tenant_text(owner_db, tenant)
    assert not any(s in text for s in SECRETS)


async def test_mem0_export_as_one_json_document(
    client: httpx.AsyncClient, tenant: Tenant, worker: Worker
) -> None:
    """mem0's get_all() answer as it is (Content-Type application/json), dry run."""
    res = await client.post(
        "/v1/admin/import",
        params={"format": "mem0", "dry_run": "true"},
        content=MEM0_EXPORT.read_bytes(),
        headers=tenant.h("admin", **{"Content-Type": "application/json"}),
    )
    assert res.status_code == 202, res.text
    job = await wait_job(client, tenant, res.json()["job_id"])
    assert job["state"] == "done" and job["result"]["dry_run"] is True
    counts = job["result"]["counts"]
    assert counts["pass"] == 17 and counts["rejected"] == 3 and counts["written"] == 0
    assert await facts_of(client, tenant, "alice") == []


async def test_ndjson_import_job_progress_and_report(
    client: httpx.AsyncClient, tenant: Tenant, worker: Worker
) -> None:
    lines: list[dict[str, Any]] = [
        {"user_id": f"imp{n % 3}", "id": f"ext-{n}", **fact(f"The user likes topic number {n}")}
        for n in range(300)
    ]
    lines[10] = {"user_id": "imp1", "id": "ext-10", **fact(f"token {OPENAI_KEY}")}
    lines[20] = {"user_id": "imp2", "id": "ext-20", **pref("German")}
    lines[21] = {"user_id": "imp2", "id": "ext-21", **pref("Dutch")}  # was imp0's
    res = await post_import(client, tenant, ndjson(lines))
    assert res.status_code == 202, res.text
    job = await wait_job(client, tenant, res.json()["job_id"])
    assert job["state"] == "done", job.get("error")
    assert job["result"]["done"] == job["result"]["total"] == 300
    report = {d["id"]: d for d in job["decisions"]}
    assert len(report) == 300
    assert report["ext-10"]["decision"] == "rejected"
    assert report["ext-10"]["reason"] == "secret_detected"
    assert report["ext-10"]["line"] == 11
    assert report["ext-20"]["decision"] == "written"
    assert report["ext-21"]["decision"] == "superseded"  # in the file's order
    assert job["result"]["counts"]["written"] == 298
    listed = await client.get("/v1/users/imp0/facts?limit=200", headers=tenant.h())
    imported = listed.json()["items"]
    assert len(imported) == 99 and all(f["source"]["kind"] == "user_message" for f in imported)


async def test_malformed_lines_are_reported_by_number(
    client: httpx.AsyncClient, tenant: Tenant, owner_db: asyncpg.Pool
) -> None:
    before = await table_counts(owner_db, tenant)
    good = {"user_id": "m1", **fact("The user likes tea")}
    body = (
        json.dumps(good).encode()
        + b"\n{not json\n"
        + json.dumps(good).encode()
        + b"\n"
        + json.dumps({"user_id": "m1", "type": "semantic"}).encode()
        + b"\n\n"
    )
    res = await post_import(client, tenant, body)
    assert res.status_code == 422, res.text
    error = res.json()["error"]
    assert error["code"] == "invalid_request" and error["details"]["lines"] == [2, 4]
    assert ["body", "line", 4, "statement"] in [f["loc"] for f in error["details"]["fields"]]
    mem0 = await post_import(client, tenant, ndjson([{"id": "x", "user_id": "u"}]), format="mem0")
    assert mem0.status_code == 422
    assert mem0.json()["error"]["details"]["fields"][0]["loc"][:3] == ["body", "line", 1]
    assert await table_counts(owner_db, tenant) == before  # nothing queued


async def test_import_needs_an_admin_key(client: httpx.AsyncClient, tenant: Tenant) -> None:
    res = await client.post(
        "/v1/admin/import",
        content=ndjson([{"user_id": "a", **fact("x")}]),
        headers=tenant.h("agent", **{"Content-Type": "application/x-ndjson"}),
    )
    assert res.status_code == 403


async def test_import_job_is_the_tenants_own(
    client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
) -> None:
    res = await post_import(client, tenant, ndjson([{"user_id": "iso", **fact("The user sings")}]))
    assert res.status_code == 202
    theirs = await client.get(f"/v1/jobs/{res.json()['job_id']}", headers=other_tenant.h("admin"))
    assert theirs.status_code == 404
    assert uuid.UUID(res.json()["job_id"])


async def test_cli_import_mem0_prints_the_report(
    client: httpx.AsyncClient, tenant: Tenant, owner_db: asyncpg.Pool, tmp_path: Path
) -> None:
    """`python -m app.cli import-mem0 FILE --tenant T`: the same import, in the CLI's
    process (no worker), its report the last line of stdout."""
    import asyncio
    import os
    import sys

    async def cli(*extra: str) -> dict[str, Any]:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "app.cli",
            "import-mem0",
            str(MEM0_EXPORT),
            "--tenant",
            tenant.name,
            *extra,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "MEMGATE_CRON": "0"},
        )
        out, err = await asyncio.wait_for(proc.communicate(), 120)
        assert proc.returncode == 0, err.decode()[-2000:]
        report: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
        return report

    dry = await cli("--dry-run")
    assert dry["result"]["counts"]["pass"] == 17 and dry["result"]["dry_run"] is True
    assert await facts_of(client, tenant, "bob") == []
    report = await cli()
    assert report["result"]["done"] == report["result"]["total"] == 20
    refused = [(d["id"], d["reason"]) for d in report["decisions"] if d["decision"] == "rejected"]
    ids = [m["id"] for m in mem0_results()]
    assert refused == [
        (ids[6], "secret_detected"),
        (ids[11], "government_id"),
        (ids[14], "secret_detected"),
    ]
    job = await client.get(f"/v1/jobs/{report['job_id']}", headers=tenant.h("admin"))
    assert job.json()["state"] == "done" and job.json()["decisions"] == report["decisions"]
    assert len(await facts_of(client, tenant, "bob")) == 8  # 10 memories, 2 refused
    text = await tenant_text(owner_db, tenant)
    assert not any(s in text for s in SECRETS)


async def test_an_import_cut_short_resumes_after_its_last_chunk(
    app: Any,
    client: httpx.AsyncClient,
    tenant: Tenant,
    owner_db: asyncpg.Pool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run that ends (its time slice, a crash) keeps the chunks it committed; the next
    run decides only the rest: every item once."""
    import time

    from app import importer

    monkeypatch.setattr(importer, "IMPORT_CHUNK", 4)
    lines = [
        {"user_id": "rs", "id": f"r{n}", **fact(f"The user likes fruit {n}")} for n in range(10)
    ]
    res = await post_import(client, tenant, ndjson(lines))  # no worker: the test runs it
    job_id = uuid.UUID(res.json()["job_id"])
    ctx = app.state.ctx
    async with owner_db.acquire() as conn:
        payload = json.loads(
            await conn.fetchval("SELECT payload::text FROM jobs WHERE id = $1", job_id)
        )
    with pytest.raises(importer.ImportSliceEnded):
        await importer.run_import(ctx, tenant.id, job_id, payload, deadline=time.monotonic())
    mid = (await client.get(f"/v1/jobs/{job_id}", headers=tenant.h("admin"))).json()
    assert mid["result"]["done"] == 4 and mid["result"]["total"] == 10
    assert len(mid["decisions"]) == 4 and len(await facts_of(client, tenant, "rs")) == 4
    assert await importer.run_import(ctx, tenant.id, job_id, payload) is True
    assert await importer.run_import(ctx, tenant.id, job_id, payload) is True  # nothing left
    end = (await client.get(f"/v1/jobs/{job_id}", headers=tenant.h("admin"))).json()
    assert end["result"]["done"] == 10
    assert sorted(d["id"] for d in end["decisions"]) == sorted(f"r{n}" for n in range(10))
    facts = await facts_of(client, tenant, "rs")
    assert len(facts) == 10 and all(f["observations"] == 1 for f in facts)
