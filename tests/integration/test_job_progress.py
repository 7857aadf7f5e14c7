"""Progress of the batch jobs (docs/api.md#jobs): re-embed, cleanup and purge report
`{total, done}` on `GET /v1/jobs/{id}` as they run, done == total at the end.

The API over the in-process ASGI transport; the jobs run in a real arq worker in this
event loop (tests/integration/test_pipeline.py's harness) against the real PostgreSQL and
Redis. Every value the job row's `result` takes is recorded by a trigger the test installs
(and removes), so the intermediate progress is seen without racing the worker.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import httpx
import pytest

from tests.conftest import Tenant
from tests.integration.test_pipeline import running_worker, wait_job

_INSTALL = [
    """CREATE TABLE test_job_progress (
         seq bigserial PRIMARY KEY, job_id uuid NOT NULL, result jsonb)""",
    """CREATE FUNCTION test_log_job_progress() RETURNS trigger
         LANGUAGE plpgsql SECURITY DEFINER AS $$
       BEGIN
         IF NEW.result IS DISTINCT FROM OLD.result THEN
           INSERT INTO test_job_progress (job_id, result) VALUES (NEW.id, NEW.result);
         END IF;
         RETURN NEW;
       END $$""",
    """CREATE TRIGGER test_job_progress AFTER UPDATE ON jobs
         FOR EACH ROW EXECUTE FUNCTION test_log_job_progress()""",
]
_REMOVE = [
    "DROP TRIGGER IF EXISTS test_job_progress ON jobs",
    "DROP FUNCTION IF EXISTS test_log_job_progress()",
    "DROP TABLE IF EXISTS test_job_progress",
]


@pytest.fixture
async def progress_log(owner_db: asyncpg.Pool) -> AsyncIterator[Any]:
    """A function: job id → the (done, total) its row showed, in order."""
    from app.embedded import citus_workers_from_env

    if citus_workers_from_env():
        # Only this observer is single-node: Citus refuses triggers on distributed tables.
        # The progress statements are the same on both; test_console.py's purge job checks
        # done == total on the cluster too.
        pytest.skip("the progress observer is a trigger, which Citus refuses on jobs")
    async with owner_db.acquire() as conn:
        for stmt in _REMOVE + _INSTALL:
            await conn.execute(stmt)

    async def seen(job_id: str) -> list[tuple[int, int]]:
        async with owner_db.acquire() as conn:
            rows = await conn.fetch(
                "SELECT result::text AS r FROM test_job_progress WHERE job_id = $1 ORDER BY seq",
                uuid.UUID(job_id),
            )
        results = [json.loads(r["r"]) for r in rows if r["r"] is not None]
        return [(int(x["done"]), int(x["total"])) for x in results]

    try:
        yield seen
    finally:
        async with owner_db.acquire() as conn:
            for stmt in _REMOVE:
                await conn.execute(stmt)


async def write_facts(client: httpx.AsyncClient, t: Tenant, user: str, n: int) -> list[str]:
    ids = []
    for i in range(n):
        r = await client.post(
            f"/v1/users/{user}/facts",
            headers=t.h(),
            json={
                "type": "semantic",
                "statement": f"The user collects vintage stamps from country number {i}",
                "source": {"kind": "user_message"},
            },
        )
        assert r.status_code == 201, r.text
        ids.append(r.json()["fact"]["id"])
    return ids


def assert_progressed(seen: list[tuple[int, int]], total: int) -> None:
    assert seen, "the job wrote no progress"
    dones = [d for d, _ in seen]
    assert dones == sorted(dones), seen  # never backwards
    assert all(t == total for _, t in seen), seen  # total known from the start
    assert any(0 < d < total for d in dones), seen  # visible between batches
    assert seen[-1] == (total, total)


async def test_reembed_reports_done_of_total(
    client: httpx.AsyncClient,
    tenant: Tenant,
    other_tenant: Tenant,
    app: Any,
    owner_db: asyncpg.Pool,
    progress_log: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from workers import reembed as reembed_worker

    await write_facts(client, tenant, "u-re", 5)
    async with owner_db.acquire() as conn:  # facts of an earlier model: 5 to migrate
        await conn.execute(
            "UPDATE facts SET embedding_model = 'earlier-model' WHERE tenant_id = $1", tenant.id
        )
    monkeypatch.setattr(reembed_worker, "BATCH_SIZE", 2)
    res = await client.post("/v1/ops/reembed", json={}, headers=tenant.h("admin"))
    assert res.status_code == 202, res.text
    job_id = res.json()["job_id"]
    async with running_worker(app.state.ctx):
        job = await wait_job(client, tenant, job_id)
    assert job["state"] == "done" and job["kind"] == "reembed"
    assert job["result"]["done"] == job["result"]["total"] == 5
    assert_progressed(await progress_log(job_id), 5)
    # another tenant's key never sees the job
    other = await client.get(f"/v1/jobs/{job_id}", headers=other_tenant.h())
    assert other.status_code == 404 and other.json()["error"]["code"] == "not_found"


async def test_cleanup_then_purge_report_done_of_total(
    client: httpx.AsyncClient,
    tenant: Tenant,
    app: Any,
    owner_db: asyncpg.Pool,
    progress_log: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import app.api.ops as ops_api
    from workers import maintenance

    await write_facts(client, tenant, "u-cl", 5)
    monkeypatch.setattr(ops_api, "LARGE_RUN", 2)  # a job, not a run in the request
    monkeypatch.setattr("app.cleanup.BATCH", 2)
    monkeypatch.setattr(maintenance, "BATCH", 2)
    body = {"filter": {"user_id": "u-cl"}, "action": "delete", "dry_run": False}
    res = await client.post("/v1/ops/cleanup", json=body, headers=tenant.h("ops"))
    assert res.status_code == 202, res.text
    cleanup_id = res.json()["job_id"]
    async with running_worker(app.state.ctx, relay=False):
        job = await wait_job(client, tenant, cleanup_id)
        assert job["state"] == "done" and job["kind"] == "cleanup"
        assert job["result"]["done"] == job["result"]["total"] == 5
        assert job["result"]["by_user"] == {"u-cl": 5}

        # the deleted facts' copies: purged now by a purge job
        refused = await client.post("/v1/ops/purge", headers=tenant.h())  # agent: not ops
        assert refused.status_code == 403, refused.text
        res = await client.post("/v1/ops/purge", headers=tenant.h("ops"))
        assert res.status_code == 202, res.text
        purge_id = res.json()["job_id"]
        job = await wait_job(client, tenant, purge_id)
    assert job["state"] == "done" and job["kind"] == "purge"
    assert job["result"] == {"total": 5, "done": 5}
    assert_progressed(await progress_log(cleanup_id), 5)
    assert_progressed(await progress_log(purge_id), 5)
    async with owner_db.acquire() as conn:
        left = await conn.fetchval(
            """SELECT count(*) FROM facts WHERE tenant_id = $1 AND status = 'deleted'
                 AND scrubbed_at IS NULL""",
            tenant.id,
        )
    assert left == 0
