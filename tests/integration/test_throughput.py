"""Writes that keep up (issue 19 §1): backpressure on observations, the queue's gauges,
and batched extraction that stays exactly-once with an audit event per decision."""

from __future__ import annotations

import re
from typing import Any

import asyncpg
import httpx
import pytest

from app.context import AppContext
from app.services import observations as observations_service
from tests.conftest import Tenant
from tests.integration.test_pipeline import observe, running_worker, u, wait_job


async def _queued_observe_jobs(owner_db: asyncpg.Pool) -> int:
    async with owner_db.acquire() as conn:
        return int(
            await conn.fetchval(
                "SELECT count(*) FROM jobs WHERE kind = 'observe' AND state = 'queued'"
            )
        )


def _gauge(text: str, name: str) -> float:
    m = re.search(rf'^{name}{{kind="observe"}} ([0-9.e+-]+)$', text, re.M)
    assert m, f"{name} missing from /metrics"
    return float(m.group(1))


async def test_backpressure_refuses_with_retry_after_and_loses_nothing(
    app: Any,
    client: httpx.AsyncClient,
    tenant: Tenant,
    owner_db: asyncpg.Pool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ctx: AppContext = app.state.ctx
    monkeypatch.setattr(observations_service, "QUEUE_STATE_TTL_S", 0.0)  # read every post
    # and forget what an earlier test's post cached for the next second
    monkeypatch.setattr(ctx, "queue_state", None)
    # other tests may have left jobs queued: the depth is the whole queue's
    before = await _queued_observe_jobs(owner_db)
    ctx.settings = ctx.settings.model_copy(update={"queue_max_depth": before + 3})
    accepted = [
        await observe(client, tenant, "bp", [u("user", f"记住我的工位在{i}楼", f"bp{i}")])
        for i in range(3)
    ]
    refused = await client.post(
        "/v1/users/bp/observations",
        json={"messages": [u("user", "记住我的工位在9楼", "bp9")]},
        headers=tenant.h(),
    )
    assert refused.status_code == 503, refused.text
    assert refused.json()["error"]["code"] == "overloaded"
    assert int(refused.headers["Retry-After"]) >= 1
    # a session's user turn queues extraction too: refused alike, nothing kept
    turn = await client.post(
        "/v1/sessions/bp-session/turns",
        json={"user_id": "bp", "role": "user", "content": "记住我的工位在8楼"},
        headers=tenant.h(),
    )
    assert turn.status_code == 503 and turn.json()["error"]["code"] == "overloaded", turn.text
    assert (await client.get("/v1/sessions/bp-session", headers=tenant.h())).status_code == 404
    async with owner_db.acquire() as conn:
        rows = await conn.fetch(
            "SELECT id FROM jobs WHERE tenant_id = $1 AND user_id = 'bp'", tenant.id
        )
    assert {str(r["id"]) for r in rows} == set(accepted)  # the refused posts wrote nothing

    metrics = (await client.get("/metrics")).text
    assert _gauge(metrics, "memgate_jobs_queued") >= before + 3
    assert _gauge(metrics, "memgate_jobs_oldest_queued_age_seconds") >= 0

    async with running_worker(ctx):
        bodies = [await wait_job(client, tenant, j, within=60) for j in accepted]
    assert [b["state"] for b in bodies] == ["done"] * 3
    async with owner_db.acquire() as conn:
        floors = await conn.fetch(
            "SELECT statement FROM facts WHERE tenant_id = $1 AND user_id = 'bp'", tenant.id
        )
    assert len(floors) == 3  # every accepted observation was extracted, once
    assert all(len(b["decisions"]) == 1 for b in bodies)
    # the workers caught up: observations are accepted again
    await observe(client, tenant, "bp", [u("user", "记住我的工位在9楼", "bp9")])


async def _post_floors(client: httpx.AsyncClient, tenant: Tenant, prefix: str) -> list[str]:
    """Six observations for six users, posted before any worker runs: held and written
    together. Each says one explicit instruction (written at once, no pool)."""
    return [
        await observe(client, tenant, f"{prefix}{i}", [u("user", f"记住我的工位在{i}楼", "t1")])
        for i in range(6)
    ]


async def _exact_trail(owner_db: asyncpg.Pool, tenant: Tenant, prefix: str) -> None:
    """One fact per user, and exactly one audit event naming each fact."""
    async with owner_db.acquire() as conn:
        facts = await conn.fetch(
            "SELECT id, user_id FROM facts WHERE tenant_id = $1 AND user_id LIKE $2",
            tenant.id,
            f"{prefix}%",
        )
        events = await conn.fetch(
            """SELECT fact_id, count(*) AS n FROM audit_events
               WHERE tenant_id = $1 AND user_id LIKE $2 AND action = 'write'
               GROUP BY fact_id""",
            tenant.id,
            f"{prefix}%",
        )
    assert sorted(r["user_id"] for r in facts) == [f"{prefix}{i}" for i in range(6)]
    assert {r["fact_id"]: r["n"] for r in events} == {r["id"]: 1 for r in facts}


async def test_jobs_held_together_are_written_in_one_batch(
    app: Any, client: httpx.AsyncClient, tenant: Tenant, owner_db: asyncpg.Pool
) -> None:
    jobs = await _post_floors(client, tenant, "bb")
    async with running_worker(app.state.ctx):
        bodies = [await wait_job(client, tenant, j, within=60) for j in jobs]
    assert [(b["state"], b["attempts"]) for b in bodies] == [("done", 1)] * 6
    assert all([d["decision"] for d in b["decisions"]] == ["written"] for b in bodies)
    assert max(b["result"].get("batch", 1) for b in bodies) > 1  # some were written together
    await _exact_trail(owner_db, tenant, "bb")


async def test_a_batch_failing_midway_rolls_back_and_writes_each_job_once(
    app: Any,
    client: httpx.AsyncClient,
    tenant: Tenant,
    owner_db: asyncpg.Pool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from app.store import jobs as jobs_store

    real = jobs_store.mark_done_many
    failures: list[int] = []

    async def fail_first(conn: Any, tenant_id: Any, now: Any, done: list[Any]) -> None:
        if not failures:  # after every write of the batch, before it commits
            failures.append(len(done))
            raise RuntimeError("the worker dies here")
        await real(conn, tenant_id, now, done)

    monkeypatch.setattr(jobs_store, "mark_done_many", fail_first)
    jobs = await _post_floors(client, tenant, "bf")
    async with running_worker(app.state.ctx):
        bodies = [await wait_job(client, tenant, j, within=60) for j in jobs]
    assert failures and failures[0] >= 1
    assert [(b["state"], b["attempts"]) for b in bodies] == [("done", 1)] * 6
    assert all([d["decision"] for d in b["decisions"]] == ["written"] for b in bodies)
    await _exact_trail(owner_db, tenant, "bf")  # the rolled-back writes left nothing


async def test_direct_writes_of_a_batch_go_in_one_run_beside_pooled_remarks(
    app: Any,
    client: httpx.AsyncClient,
    tenant: Tenant,
    owner_db: asyncpg.Pool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Jobs held together, each with an explicit instruction and a remark for the pool
    (about another subject): the instructions are written in one run, every job gets its
    decisions in its own order, and the trail is exact."""
    from app import writer

    runs: list[int] = []
    real = writer.write_many

    async def counted(*args: Any, **kw: Any) -> Any:
        runs.append(len(args[4]))  # the candidates of one run
        return await real(*args, **kw)

    monkeypatch.setattr(writer, "write_many", counted)
    jobs = [
        await observe(
            client,
            tenant,
            f"mix{i}",
            [
                u("user", f"记住我的工位在{i + 2}楼", "t1"),
                u("user", "I prefer dark mode in every editor", "t2"),
            ],
        )
        for i in range(4)
    ]
    async with running_worker(app.state.ctx):
        bodies = [await wait_job(client, tenant, j, within=60) for j in jobs]
    assert [(b["state"], b["attempts"]) for b in bodies] == [("done", 1)] * 4
    for b in bodies:
        assert [(d["turn_id"], d["decision"]) for d in b["decisions"]] == [
            ("t1", "written"),
            ("t2", "pending"),
        ], b["decisions"]
    batched = max(b["result"].get("batch", 1) for b in bodies)
    assert batched > 1
    assert max(runs) == batched  # one run held every written instruction of the batch
    async with owner_db.acquire() as conn:
        facts = await conn.fetch(
            "SELECT user_id, statement FROM facts WHERE tenant_id = $1 AND user_id LIKE 'mix%'",
            tenant.id,
        )
        pending = await conn.fetch(
            "SELECT user_id, observations FROM candidates"
            " WHERE tenant_id = $1 AND user_id LIKE 'mix%'",
            tenant.id,
        )
    assert sorted(r["user_id"] for r in facts) == [f"mix{i}" for i in range(4)]
    assert sorted((r["user_id"], r["observations"]) for r in pending) == [
        (f"mix{i}", 1) for i in range(4)
    ]
