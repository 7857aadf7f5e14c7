"""Operators' cleanup and stats over HTTP (docs/api.md#endpoints,
docs/architecture.md#observability, docs/lifecycle.md#deletion)."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg
import httpx
import pytest

from tests.conftest import Tenant


async def seed(client: httpx.AsyncClient, t: Tenant) -> dict[str, list[str]]:
    """Facts of three users from several sources; returns ids per source kind."""
    ids: dict[str, list[str]] = {}
    rows = [
        ("u-1", "agent_inference", "The user probably likes hiking"),
        ("u-1", "agent_inference", "The user seems to enjoy jazz concerts"),
        ("u-2", "agent_inference", "The user may be vegetarian"),
        ("u-2", "user_message", "The user works with Kubernetes daily"),
        ("u-3", "explicit_instruction", "The user wants answers in bullet points"),
    ]
    for user, kind, statement in rows:
        r = await client.post(
            f"/v1/users/{user}/facts",
            headers=t.h(),
            json={"type": "semantic", "statement": statement, "source": {"kind": kind}},
        )
        assert r.status_code == 201, r.text
        ids.setdefault(kind, []).append(r.json()["fact"]["id"])
    return ids


async def test_dry_run_then_real_delete_agree(
    client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant, owner_db: asyncpg.Pool
) -> None:
    ids = await seed(client, tenant)
    other = await seed(client, other_tenant)
    body: dict[str, Any] = {"filter": {"source_kind": "agent_inference"}, "action": "delete"}
    dry = await client.post("/v1/ops/cleanup", json=body, headers=tenant.h("ops"))
    assert dry.status_code == 200, dry.text
    assert dry.json()["dry_run"] is True
    assert dry.json()["total"] == 3 and dry.json()["by_user"] == {"u-1": 2, "u-2": 1}
    # a dry run changes nothing
    assert (
        await owner_db.fetchval(
            "SELECT count(*) FROM facts WHERE id = ANY($1::uuid[]) AND status = 'active'",
            [uuid.UUID(i) for i in ids["agent_inference"]],
        )
        == 3
    )
    real = await client.post(
        "/v1/ops/cleanup", json={**body, "dry_run": False}, headers=tenant.h("ops")
    )
    assert real.status_code == 200, real.text
    assert real.json()["dry_run"] is False
    assert real.json()["total"] == dry.json()["total"]
    assert real.json()["by_user"] == dry.json()["by_user"]
    rows = await owner_db.fetch(
        "SELECT id, status, statement, embedding FROM facts WHERE id = ANY($1::uuid[])",
        [uuid.UUID(i) for i in ids["agent_inference"]],
    )
    assert all(
        r["status"] == "deleted" and r["statement"] == "" and r["embedding"] is None for r in rows
    )
    assert (
        await owner_db.fetchval("SELECT count(*) FROM tombstones WHERE tenant_id = $1", tenant.id)
        >= 3
    )
    audits = await owner_db.fetch(
        "SELECT user_id, decision FROM audit_events WHERE tenant_id = $1 AND action = 'cleanup'",
        tenant.id,
    )
    assert sorted(a["user_id"] for a in audits if a["user_id"]) == ["u-1", "u-1", "u-2"]
    assert any(a["user_id"] is None for a in audits)  # the run's own summary event
    # the same run again matches nothing; other sources and the other tenant are untouched
    again = await client.post("/v1/ops/cleanup", json=body, headers=tenant.h("ops"))
    assert again.json()["total"] == 0
    r = await client.get(f"/v1/users/u-2/facts/{ids['user_message'][0]}", headers=tenant.h())
    assert r.status_code == 200
    r = await client.get(
        f"/v1/users/u-1/facts/{other['agent_inference'][0]}", headers=other_tenant.h()
    )
    assert r.status_code == 200
    # a deleted statement is now blocked from coming back by a non-explicit write
    r = await client.post(
        "/v1/users/u-2/facts",
        headers=tenant.h(),
        json={
            "type": "semantic",
            "statement": "The user may be vegetarian",
            "source": {"kind": "agent_inference"},
        },
    )
    assert r.json()["decision"] == "rejected" and r.json()["reason"] == "tombstoned"


async def test_archive_by_user_and_confidence(
    client: httpx.AsyncClient, tenant: Tenant, owner_db: asyncpg.Pool
) -> None:
    ids = await seed(client, tenant)
    body = {
        "filter": {"user_id": "u-2", "max_confidence": 0.99},
        "action": "archive",
        "dry_run": False,
    }
    r = await client.post(
        "/v1/ops/cleanup", json={**body, "dry_run": True}, headers=tenant.h("ops")
    )
    assert r.json()["by_user"] == {"u-2": 2}
    r = await client.post("/v1/ops/cleanup", json=body, headers=tenant.h("ops"))
    assert r.json()["total"] == 2
    rows = await owner_db.fetch(
        "SELECT status, archived_reason FROM facts WHERE tenant_id = $1 AND user_id = 'u-2'",
        tenant.id,
    )
    assert {(x["status"], x["archived_reason"]) for x in rows} == {("archived", "cleanup")}
    assert (
        await owner_db.fetchval("SELECT count(*) FROM tombstones WHERE tenant_id = $1", tenant.id)
        == 0
    )
    active = (await client.get("/v1/users/u-2/facts?status=active", headers=tenant.h())).json()
    assert active["items"] == []
    assert ids


async def test_candidate_cleanup(
    client: httpx.AsyncClient, tenant: Tenant, owner_db: asyncpg.Pool
) -> None:
    await client.put(
        "/v1/admin/policy", json={"sensitive": {"ask_user": True}}, headers=tenant.h("admin")
    )
    for user, text in [("u-1", "用户有高血压"), ("u-2", "用户有哮喘")]:
        r = await client.post(
            f"/v1/users/{user}/facts",
            headers=tenant.h(),
            json={
                "type": "semantic",
                "statement": text,
                "predicate": "health_condition",
                "value": text,
                "source": {"kind": "user_message"},
            },
        )
        assert r.status_code == 202
    body: dict[str, Any] = {"filter": {"candidate": True}, "action": "delete"}
    dry = (await client.post("/v1/ops/cleanup", json=body, headers=tenant.h("ops"))).json()
    assert dry["by_user"] == {"u-1": 1, "u-2": 1}
    real = (
        await client.post(
            "/v1/ops/cleanup", json={**body, "dry_run": False}, headers=tenant.h("ops")
        )
    ).json()
    assert real["total"] == 2
    rows = await owner_db.fetch(
        "SELECT status, statement FROM candidates WHERE tenant_id = $1", tenant.id
    )
    assert all(r["status"] == "deleted" and r["statement"] == "" for r in rows)


async def test_large_run_becomes_a_job(
    client: httpx.AsyncClient, tenant: Tenant, app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import app.api.ops as ops_api
    from workers.jobs import run_job
    from workers.settings import HANDLERS

    await seed(client, tenant)
    monkeypatch.setattr(ops_api, "LARGE_RUN", 2)
    monkeypatch.setattr("app.cleanup.BATCH", 2)  # several batches
    body = {"filter": {}, "action": "delete", "dry_run": False}
    r = await client.post("/v1/ops/cleanup", json=body, headers=tenant.h("ops"))
    assert r.status_code == 202, r.text
    job_id = r.json()["job_id"]
    assert r.json()["total"] == 5
    worker_ctx = {"app": app.state.ctx, "handlers": HANDLERS}
    assert await run_job(worker_ctx, job_id, str(tenant.id)) == "done"
    job = (await client.get(f"/v1/jobs/{job_id}", headers=tenant.h())).json()
    assert job["state"] == "done"
    left = await client.post(
        "/v1/ops/cleanup", json={"action": "delete", "filter": {}}, headers=tenant.h("ops")
    )
    assert left.json()["total"] == 0


async def test_stats_and_roles(client: httpx.AsyncClient, tenant: Tenant, app: Any) -> None:
    await seed(client, tenant)
    await client.post(
        "/v1/users/u-1/facts",
        headers=tenant.h(),
        json={"type": "semantic", "statement": "今天好累啊", "source": {"kind": "user_message"}},
    )
    await client.post("/v1/users/u-1/recall", json={"query": "hiking"}, headers=tenant.h())
    await client.post("/v1/users/u-1/recall", json={"query": "zzz"}, headers=tenant.h())
    if app.state.ctx.recall_log is not None:
        await app.state.ctx.recall_log.flush()  # the recall log is written in batches
    assert (await client.get("/v1/ops/stats", headers=tenant.h())).status_code == 403
    assert (
        await client.post("/v1/ops/cleanup", json={"action": "delete"}, headers=tenant.h())
    ).status_code == 403
    r = await client.get("/v1/ops/stats", headers=tenant.h("ops"))
    assert r.status_code == 200, r.text
    s = r.json()
    assert s["facts"]["by_status"]["active"] == 5
    assert s["facts"]["active_by_source_kind"]["agent_inference"] == 3
    assert s["growth"]["last_day"] == 5 and s["growth"]["last_week"] == 5
    assert s["gate"]["by_decision"]["written"] == 5
    assert s["gate"]["by_reason"]["not_reusable"] == 1
    assert s["recall"]["total"] == 2 and 0 <= s["recall"]["hit_rate"] <= 1
    assert s["recall"]["injected_tokens"] >= 0
    assert set(s) >= {"candidates", "promotions", "expiry", "feedback", "sessions"}
