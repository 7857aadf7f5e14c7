"""The foundation over real HTTP and a real PostgreSQL: health, auth, errors, keys, RLS."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import asyncpg
import httpx
import pytest

from app.store.db import tenant_tx
from app.store.migrate import migrate
from tests.conftest import Stack, Tenant


async def test_healthz_and_readyz(client: httpx.AsyncClient) -> None:
    assert (await client.get("/healthz")).json() == {"status": "ok"}
    ready = await client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json()["postgres"] == "ok" and ready.json()["redis"] == "ok"


async def test_metrics_is_prometheus_text(client: httpx.AsyncClient) -> None:
    await client.get("/healthz")
    res = await client.get("/metrics")
    assert res.status_code == 200
    assert "memgate_http_request_duration_seconds" in res.text
    assert "memgate_promotions_total" in res.text  # worker-side counters are rendered too


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer"},
        {"Authorization": "Basic abc"},
        {"Authorization": "Bearer mgk_nope"},
        {"Authorization": "Bearer sk-something"},
        {"Authorization": "Bearer mgu_forged.sig"},
    ],
    ids=["none", "empty", "basic", "unknown_key", "foreign_format", "forged_token"],
)
async def test_missing_or_invalid_key_is_401(
    client: httpx.AsyncClient, headers: dict[str, str]
) -> None:
    res = await client.get("/v1/admin/keys", headers=headers)
    assert res.status_code == 401
    body = res.json()
    assert body["error"]["code"] == "unauthorized"
    assert set(body["error"]) == {"code", "message", "details"}


@pytest.mark.parametrize("role", ["agent", "ops"])
async def test_wrong_role_is_403(client: httpx.AsyncClient, tenant: Tenant, role: str) -> None:
    res = await client.get("/v1/admin/keys", headers=tenant.h(role))
    assert res.status_code == 403
    assert res.json()["error"]["code"] == "forbidden"


async def test_admin_creates_lists_and_revokes_keys(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    res = await client.post(
        "/v1/admin/keys",
        json={"role": "agent", "name": "planner", "scopes": ["project:clarity"]},
        headers=tenant.h("admin"),
    )
    assert res.status_code == 201
    created = res.json()
    assert created["key"].startswith("mgk_") and created["scopes"] == ["project:clarity"]
    assert created["max_sensitivity"] == "personal"
    listed = (await client.get("/v1/admin/keys", headers=tenant.h("admin"))).json()
    assert created["id"] in {k["id"] for k in listed["items"]}
    assert all("key" not in k for k in listed["items"])  # shown once, never listed
    assert listed["next_cursor"] is None
    new_key = {"Authorization": f"Bearer {created['key']}"}
    res = await client.get("/v1/admin/keys", headers=new_key)
    assert res.status_code == 403  # an agent key authenticates but is not admin
    res = await client.delete(f"/v1/admin/keys/{created['id']}", headers=tenant.h("admin"))
    assert res.json() == {"id": created["id"], "status": "revoked"}
    res = await client.get("/v1/admin/keys", headers=new_key)
    assert res.status_code == 401


async def test_keys_list_paginates(client: httpx.AsyncClient, tenant: Tenant) -> None:
    for _ in range(3):
        await client.post("/v1/admin/keys", json={"role": "agent"}, headers=tenant.h("admin"))
    seen: list[str] = []
    cursor = None
    while True:
        params = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        page = (await client.get("/v1/admin/keys", params=params, headers=tenant.h("admin"))).json()
        seen += [k["id"] for k in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert len(seen) == len(set(seen)) == 6  # agent, ops, admin + 3


async def test_other_tenants_key_is_404(
    client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
) -> None:
    created = (
        await client.post("/v1/admin/keys", json={"role": "agent"}, headers=tenant.h("admin"))
    ).json()
    res = await client.delete(f"/v1/admin/keys/{created['id']}", headers=other_tenant.h("admin"))
    assert res.status_code == 404
    assert res.json()["error"]["code"] == "not_found"
    res = await client.delete(f"/v1/admin/keys/{uuid.uuid4()}", headers=tenant.h("admin"))
    assert res.status_code == 404


@pytest.mark.parametrize(
    ("content", "body"),
    [
        ("application/json", b"{not json"),
        ("application/json", b'{"role": "root"}'),
        ("application/json", b'{"role": "agent", "extra": 1}'),
        ("application/json", b"[]"),
    ],
    ids=["malformed_json", "bad_enum", "unknown_field", "wrong_type"],
)
async def test_invalid_body_is_422_invalid_request(
    client: httpx.AsyncClient, tenant: Tenant, content: str, body: bytes
) -> None:
    res = await client.post(
        "/v1/admin/keys", content=body, headers=tenant.h("admin", **{"Content-Type": content})
    )
    assert res.status_code == 422
    err = res.json()["error"]
    assert err["code"] == "invalid_request"
    assert err["details"]["fields"], "the offending fields are named"


async def test_body_over_limit_is_413(client: httpx.AsyncClient, tenant: Tenant) -> None:
    res = await client.post(
        "/v1/admin/keys",
        content=b"x" * 1_100_000,
        headers=tenant.h("admin", **{"Content-Type": "application/json"}),
    )
    assert res.status_code == 413
    assert res.json()["error"]["code"] == "payload_too_large"


async def test_unknown_route_is_404_json(client: httpx.AsyncClient) -> None:
    res = await client.get("/v1/nothing-here")
    assert res.status_code == 404
    assert res.json()["error"]["code"] == "not_found"


async def test_policy_get_put_validates_and_versions(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    base = (await client.get("/v1/admin/policy", headers=tenant.h("admin"))).json()
    assert base["effective"]["promote"]["min_observations"] == 2
    res = await client.put(
        "/v1/admin/policy", json={"promote": {"min_observations": 3}}, headers=tenant.h("admin")
    )
    assert res.status_code == 200
    assert res.json()["effective"]["promote"]["min_observations"] == 3
    assert res.json()["version"] != base["version"]
    bad = await client.put(
        "/v1/admin/policy", json={"recall": {"k": 500}}, headers=tenant.h("admin")
    )
    assert bad.status_code == 422 and bad.json()["error"]["code"] == "invalid_request"
    unknown = await client.put("/v1/admin/policy", json={"nonsense": 1}, headers=tenant.h("admin"))
    assert unknown.status_code == 422


async def test_app_connects_as_rls_role(app: object) -> None:
    ctx = app.state.ctx  # type: ignore[attr-defined]
    async with ctx.pool.acquire() as conn:
        assert await conn.fetchval("SELECT current_user") == "memgate_app"
        assert not await conn.fetchval(
            "SELECT rolbypassrls FROM pg_roles WHERE rolname = current_user"
        )


async def test_rls_hides_other_tenants_rows_even_without_a_filter(
    app: object, owner_db: asyncpg.Pool, tenant: Tenant, other_tenant: Tenant
) -> None:
    ctx = app.state.ctx  # type: ignore[attr-defined]
    async with tenant_tx(ctx.pool, tenant.id) as conn:
        # no tenant filter on purpose: RLS must do it
        tenants = {r["tenant_id"] for r in await conn.fetch("SELECT tenant_id FROM api_keys")}
        names = {r["name"] for r in await conn.fetch("SELECT name FROM tenants")}
        with pytest.raises(asyncpg.PostgresError):  # cannot write into another tenant
            await conn.execute(
                "INSERT INTO audit_events (tenant_id, action) VALUES ($1, 'x')", other_tenant.id
            )
    assert tenants == {tenant.id}
    assert names == {tenant.name}
    async with ctx.pool.acquire() as conn:  # no tenant bound at all: nothing visible
        assert await conn.fetchval("SELECT count(*) FROM api_keys") == 0
    async with owner_db.acquire() as conn:  # the owner sees both (setup role, not the app)
        assert (
            await conn.fetchval(
                "SELECT count(DISTINCT tenant_id) FROM api_keys WHERE tenant_id = ANY($1)",
                [tenant.id, other_tenant.id],
            )
            == 2
        )


async def test_migrations_are_idempotent_and_safe_concurrently(migrated: Stack) -> None:
    import asyncio

    results = await asyncio.gather(migrate(migrated.database_url), migrate(migrated.database_url))
    assert results == [[], []]


async def test_pooled_connections_keep_role_and_no_tenant_between_requests(app: object) -> None:
    ctx = app.state.ctx  # type: ignore[attr-defined]
    some_tenant = uuid.uuid4()
    for _ in range(3):  # released and re-acquired: the tenant binding never survives
        async with tenant_tx(ctx.pool, some_tenant) as conn:
            assert await conn.fetchval("SELECT memgate_tenant()") == some_tenant
        async with ctx.pool.acquire() as conn:
            assert await conn.fetchval("SELECT memgate_tenant()") is None
            assert await conn.fetchval("SELECT current_user") == "memgate_app"


async def test_tenant_tx_commits_on_success_and_rolls_back_on_error(
    app: object, owner_db: asyncpg.Pool, tenant: Tenant
) -> None:
    """The tenant transaction commits what its block wrote, rolls everything back when
    the block raises (the error is the block's own) or a statement fails, and the
    connection goes back to the pool outside any transaction."""
    ctx = app.state.ctx  # type: ignore[attr-defined]
    kept, dropped = f"tx-kept-{uuid.uuid4().hex[:8]}", f"tx-dropped-{uuid.uuid4().hex[:8]}"
    insert = "INSERT INTO audit_events (tenant_id, action) VALUES ($1, $2)"
    async with tenant_tx(ctx.pool, tenant.id) as conn:
        assert conn.is_in_transaction()
        assert await conn.fetchval("SELECT memgate_tenant()") == tenant.id
        await conn.execute(insert, tenant.id, kept)
    with pytest.raises(LookupError, match="the block's own"):
        async with tenant_tx(ctx.pool, tenant.id) as conn:
            await conn.execute(insert, tenant.id, dropped)
            raise LookupError("the block's own")
    with pytest.raises(asyncpg.PostgresError):  # a failed statement: all rolled back
        async with tenant_tx(ctx.pool, tenant.id) as conn:
            await conn.execute(insert, tenant.id, dropped)
            await conn.execute(insert, uuid.uuid4(), dropped)  # another tenant's: refused
    inside = asyncio.Event()

    async def cancelled() -> None:  # a request cancelled mid-transaction (client gone)
        async with tenant_tx(ctx.pool, tenant.id) as conn:
            await conn.execute(insert, tenant.id, dropped)
            inside.set()
            await asyncio.sleep(30)

    task = asyncio.create_task(cancelled())
    await inside.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    async with owner_db.acquire() as conn:
        actions = {
            r["action"]
            for r in await conn.fetch(
                "SELECT action FROM audit_events WHERE tenant_id = $1 AND action = ANY($2)",
                tenant.id,
                [kept, dropped],
            )
        }
    assert actions == {kept}
    for _ in range(ctx.pool.get_max_size()):  # every pooled connection is clean
        async with ctx.pool.acquire() as conn:
            assert not conn.is_in_transaction()
            assert await conn.fetchval("SELECT memgate_tenant()") is None


async def test_trace_id_is_echoed_and_used_by_recall(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    res = await client.get("/healthz", headers={"X-Trace-Id": "turn-42.a"})
    assert res.headers["x-trace-id"] == "turn-42.a"
    generated = (await client.get("/healthz")).headers["x-trace-id"]
    assert len(generated) == 32
    bad = await client.get("/healthz", headers={"X-Trace-Id": "no spaces allowed"})
    assert bad.headers["x-trace-id"] != "no spaces allowed"
    res = await client.post(
        "/v1/users/u1/recall", json={"query": "hello"}, headers=tenant.h(**{"X-Trace-Id": "t-77"})
    )
    assert res.json()["trace_id"] == "t-77"


async def test_rate_limit_per_key_answers_429(migrated: Stack, tenant: Tenant) -> None:
    from app.config import Settings
    from app.main import create_app

    limited = create_app(Settings(MEMGATE_RATE_LIMIT_RPS=0.5, MEMGATE_RATE_LIMIT_BURST=2))
    async with limited.router.lifespan_context(limited):
        transport = httpx.ASGITransport(app=limited)
        async with httpx.AsyncClient(transport=transport, base_url="http://x") as c:
            codes = [
                (await c.get("/v1/users/u/facts", headers=tenant.h())).status_code for _ in range(3)
            ]
            assert codes == [200, 200, 429]
            res = await c.get("/v1/users/u/facts", headers=tenant.h())
            assert res.json()["error"]["code"] == "rate_limited"
            assert int(res.headers["retry-after"]) >= 1
            # another key has its own bucket
            assert (await c.get("/v1/users/u/facts", headers=tenant.h("ops"))).status_code == 200


async def test_worker_counters_reach_metrics_in_one_batch(
    app: Any, client: httpx.AsyncClient
) -> None:
    """Worker-side counts wait in the process and reach Redis together (one pipelined
    call, not one per event), within FLUSH_S or at once on flush_worker_counts."""
    from app import metrics

    redis = app.state.ctx.redis
    label = uuid.uuid4().hex[:8]  # a fresh series: counts left by other tests do not mix in
    for _ in range(250):
        await metrics.worker_incr(redis, "memgate_jobs_total", kind=label, outcome="done")
    await metrics.worker_incr(redis, "memgate_jobs_total", 2, kind=label, outcome="failed")
    series = f'memgate_jobs_total{{kind="{label}",outcome="done"}}'
    assert await redis.hget(metrics.WORKER_METRICS_KEY, series) is None  # not sent yet
    await metrics.flush_worker_counts(redis)
    assert float(await redis.hget(metrics.WORKER_METRICS_KEY, series)) == 250
    text = (await client.get("/metrics")).text
    assert f"{series} 250.0" in text
    assert f'memgate_jobs_total{{kind="{label}",outcome="failed"}} 2.0' in text
    # without an explicit flush, the next counts arrive within FLUSH_S
    await metrics.worker_incr(redis, "memgate_jobs_total", kind=label, outcome="done")
    await asyncio.sleep(metrics.FLUSH_S + 0.3)
    assert float(await redis.hget(metrics.WORKER_METRICS_KEY, series)) == 251
