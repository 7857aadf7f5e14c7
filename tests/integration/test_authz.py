"""Authorization over a live server (uvicorn on a loopback socket, the `http` fixture):
idempotency replays only to the principal that made the request, and every route that
returns traces, jobs, audit rows, session hints or a user's facts honours the caller's
scopes and sensitivity ceiling exactly as the fact routes do (404 for what it may not see).
"""

from __future__ import annotations

import asyncio
import hashlib
import time
import uuid
from typing import Any

import asyncpg
import httpx
import orjson
import pytest

from tests.conftest import Tenant

ALPHA, BETA = "project:alpha", "project:beta"


@pytest.fixture
async def t(tenant_factory: Any) -> Tenant:
    """A tenant with, beside agent/ops/admin: an unlimited key that sees everything
    (`full`), keys limited to project:alpha, and an ops key capped at `personal`."""
    return await tenant_factory(
        full={"role": "admin", "max_sensitivity": "restricted"},
        alpha={"role": "agent", "scopes": [ALPHA]},
        alpha_ops={"role": "ops", "scopes": [ALPHA]},
        alpha_admin={"role": "admin", "scopes": [ALPHA]},
        ops_full={"role": "ops", "max_sensitivity": "restricted"},
    )


def _uid() -> str:
    return f"u-{uuid.uuid4().hex[:8]}"


async def _write(
    http: httpx.AsyncClient,
    t: Tenant,
    u: str,
    statement: str,
    *,
    key: str = "full",
    scope: str = "global",
    sensitivity: str = "normal",
    **extra: Any,
) -> dict[str, Any]:
    body = {
        "type": "semantic",
        "statement": statement,
        "scope": scope,
        "sensitivity": sensitivity,
        "source": {"kind": "explicit_instruction"},
        **extra,
    }
    r = await http.post(f"/v1/users/{u}/facts", json=body, headers=t.h(key))
    assert r.status_code in (200, 201), r.text
    out: dict[str, Any] = r.json()
    return out


async def _token(http: httpx.AsyncClient, t: Tenant, u: str, key: str) -> dict[str, str]:
    r = await http.post(f"/v1/users/{u}/tokens", json={}, headers=t.h(key))
    assert r.status_code == 201, r.text
    return {"Authorization": f"Bearer {r.json()['token']}"}


# ----------------------------------------------------------------------- idempotency


async def test_key_creation_is_never_replayed_to_another_principal(
    http: httpx.AsyncClient, t: Tenant, owner_db: asyncpg.Pool
) -> None:
    k = {"Idempotency-Key": f"mk-{uuid.uuid4()}"}
    body = {"role": "admin", "name": f"ops-{uuid.uuid4().hex[:6]}"}
    first = await http.post("/v1/admin/keys", json=body, headers=t.h("admin", **k))
    assert first.status_code == 201 and first.json()["key"].startswith("mgk_")
    # A scope-limited agent key replaying the same request gets its own authorization.
    stolen = await http.post("/v1/admin/keys", json=body, headers=t.h("alpha", **k))
    assert stolen.status_code == 403 and stolen.json()["error"]["code"] == "forbidden"
    assert first.json()["key"] not in stolen.text
    # The admin's own retry mints nothing and shows no secret: 409 naming the first key.
    again = await http.post("/v1/admin/keys", json=body, headers=t.h("admin", **k))
    assert again.status_code == 409, again.text
    err = again.json()["error"]
    assert err["code"] == "idempotency_conflict"
    secret = first.json()["key"]
    assert err["details"]["first"]["id"] == first.json()["id"] and secret not in again.text
    listed = (await http.get("/v1/admin/keys?limit=200", headers=t.h("admin"))).json()
    assert [x["name"] for x in listed["items"]].count(body["name"]) == 1
    # No stored answer holds a credential or the header's text.
    rows = await owner_db.fetch(
        "SELECT key, response::text AS response FROM idempotency WHERE tenant_id = $1", t.id
    )
    assert rows and all(secret not in (r["response"] or "") for r in rows)
    assert all(r["key"] != k["Idempotency-Key"] for r in rows)


async def test_token_request_is_never_replayed_to_another_user(
    http: httpx.AsyncClient, t: Tenant, owner_db: asyncpg.Pool
) -> None:
    a, b = _uid(), _uid()
    k = {"Idempotency-Key": f"tok-{uuid.uuid4()}"}
    first = await http.post(f"/v1/users/{a}/tokens", json={}, headers=t.h("agent", **k))
    assert first.status_code == 201
    token_a = first.json()["token"]
    token_b = await _token(http, t, b, "agent")
    replay = await http.post(f"/v1/users/{a}/tokens", json={}, headers={**token_b, **k})
    assert replay.status_code == 403 and token_a not in replay.text
    again = await http.post(f"/v1/users/{a}/tokens", json={}, headers=t.h("agent", **k))
    assert again.status_code == 409 and token_a not in again.text
    assert again.json()["error"]["details"]["first"]["user_id"] == a
    dump = await owner_db.fetchval(
        "SELECT string_agg(response::text, ' ') FROM idempotency WHERE tenant_id = $1", t.id
    )
    assert dump is not None and "mgu_" not in dump and token_a not in dump


async def test_an_error_is_never_replayed(http: httpx.AsyncClient, t: Tenant) -> None:
    k = {"Idempotency-Key": f"err-{uuid.uuid4()}"}
    body = {"role": "agent", "name": "x"}
    low = await http.post("/v1/admin/keys", json=body, headers=t.h("agent", **k))
    assert low.status_code == 403
    high = await http.post("/v1/admin/keys", json=body, headers=t.h("admin", **k))
    assert high.status_code == 201 and high.json()["key"].startswith("mgk_")
    # The same caller's own 4xx is not stored either: its retry runs again.
    bad = {"type": "semantic", "statement": ""}
    u = _uid()
    for _ in range(2):
        r = await http.post(f"/v1/users/{u}/facts", json=bad, headers=t.h("agent", **k))
        assert r.status_code == 422 and "idempotent-replayed" not in r.headers


async def test_the_same_principal_gets_the_first_answer(
    http: httpx.AsyncClient, t: Tenant, owner_db: asyncpg.Pool
) -> None:
    u = _uid()
    k = {"Idempotency-Key": f"w-{uuid.uuid4()}"}
    body = {"type": "semantic", "statement": "用户喜欢爬山", "source": {"kind": "user_message"}}
    r1 = await http.post(f"/v1/users/{u}/facts", json=body, headers=t.h("agent", **k))
    r2 = await http.post(f"/v1/users/{u}/facts", json=body, headers=t.h("agent", **k))
    assert r1.status_code == 201 and r2.status_code == 201
    assert r2.content == r1.content and r2.headers["idempotent-replayed"] == "true"
    # Another agent key of the tenant with the same header writes on its own account.
    r3 = await http.post(f"/v1/users/{u}/facts", json=body, headers=t.h("full", **k))
    assert "idempotent-replayed" not in r3.headers and r3.json()["decision"] == "merged"
    n = await owner_db.fetchval(
        "SELECT count(*) FROM facts WHERE tenant_id = $1 AND user_id = $2", t.id, u
    )
    assert n == 1


async def test_forget_me_removes_the_users_stored_answers(
    http: httpx.AsyncClient, t: Tenant, owner_db: asyncpg.Pool
) -> None:
    u = _uid()
    k = {"Idempotency-Key": f"f-{uuid.uuid4()}"}
    body = {
        "type": "semantic",
        "statement": "用户住在杭州西湖区",
        "source": {"kind": "explicit_instruction"},
    }
    first = await http.post(f"/v1/users/{u}/facts", json=body, headers=t.h("agent", **k))
    assert first.status_code == 201
    sid = f"s-{uuid.uuid4().hex[:8]}"
    turn = {"user_id": u, "role": "user", "content": "我在看机票"}
    r = await http.post(f"/v1/sessions/{sid}/turns", json=turn, headers=t.h("agent", **k))
    assert r.status_code == 201
    deadline = time.monotonic() + 10  # an answer is stored just after it is sent
    while True:
        held = await owner_db.fetchval(
            """SELECT count(*) FROM idempotency WHERE tenant_id = $1 AND user_id = $2
               AND status_code IS NOT NULL""",
            t.id,
            u,
        )
        if held == 2 or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.05)
    assert held == 2
    token = await _token(http, t, u, "full")
    assert (await http.delete("/v1/me", headers=token)).status_code == 200
    left = await owner_db.fetch(
        "SELECT response::text AS r FROM idempotency WHERE tenant_id = $1", t.id
    )
    assert all("杭州" not in (x["r"] or "") for x in left)
    assert (
        await owner_db.fetchval(
            "SELECT count(*) FROM idempotency WHERE tenant_id = $1 AND user_id = $2", t.id, u
        )
        == 0
    )
    again = await http.post(f"/v1/users/{u}/facts", json=body, headers=t.h("agent", **k))
    assert "idempotent-replayed" not in again.headers
    assert again.json().get("fact", {}).get("id") != first.json()["fact"]["id"]


async def test_a_claim_whose_request_died_is_free_within_seconds(
    http: httpx.AsyncClient, t: Tenant, owner_db: asyncpg.Pool
) -> None:
    u = _uid()
    raw_key = f"dead-{uuid.uuid4()}"
    body = orjson.dumps(
        {"type": "semantic", "statement": "用户养了一只猫", "source": {"kind": "user_message"}}
    )
    secret = t.keys["agent"]
    async with owner_db.acquire() as conn:
        key_id = await conn.fetchval(
            "SELECT id FROM api_keys WHERE key_hash = $1", hashlib.sha256(secret.encode()).digest()
        )
        # What a request that died mid-way leaves: a claim, no answer, a lease running out.
        await conn.execute(
            """INSERT INTO idempotency (tenant_id, principal_id, key, method, path, body_hash,
                                        user_id, created_at, lease_until)
               VALUES ($1, $2, $3, 'POST', $4, $5, $6, now(),
                       clock_timestamp() + interval '2 s')""",
            t.id,
            key_id,
            hashlib.sha256(raw_key.encode()).hexdigest(),
            f"/v1/users/{u}/facts",
            hashlib.sha256(body).hexdigest(),
            u,
        )
    started = time.monotonic()
    r = await http.post(
        f"/v1/users/{u}/facts",
        content=body,
        headers=t.h("agent", **{"Idempotency-Key": raw_key, "Content-Type": "application/json"}),
    )
    assert r.status_code == 201, r.text
    assert time.monotonic() - started < 12  # the lease (2 s here, 6 s at most), not 120 s


# --------------------------------------------------------------- scopes and ceilings


async def test_traces_and_jobs_are_404_outside_the_keys_scopes(
    http: httpx.AsyncClient, t: Tenant
) -> None:
    u = _uid()
    await _write(http, t, u, "用户的 beta 项目代号是 Orion", scope=BETA)
    trace = f"tr-{uuid.uuid4().hex[:8]}"
    r = await http.post(
        f"/v1/users/{u}/recall",
        headers=t.h("full"),
        json={"query": "beta 项目代号", "scope": BETA, "trace_id": trace},
    )
    assert r.status_code == 200 and r.json()["facts"]
    assert (await http.get(f"/v1/traces/{trace}", headers=t.h("full"))).status_code == 200
    hidden = await http.get(f"/v1/traces/{trace}", headers=t.h("alpha"))
    assert hidden.status_code == 404 and "Orion" not in hidden.text

    obs = {"messages": [{"role": "user", "content": "记住我喜欢用 vim"}], "scope": BETA}
    job = (await http.post(f"/v1/users/{u}/observations", json=obs, headers=t.h("full"))).json()
    assert (await http.get(f"/v1/jobs/{job['job_id']}", headers=t.h("agent"))).status_code == 200
    assert (await http.get(f"/v1/jobs/{job['job_id']}", headers=t.h("alpha"))).status_code == 404
    mine = {"messages": [{"role": "user", "content": "记住我喜欢用 emacs"}], "scope": ALPHA}
    own = (await http.post(f"/v1/users/{u}/observations", json=mine, headers=t.h("alpha"))).json()
    assert (await http.get(f"/v1/jobs/{own['job_id']}", headers=t.h("alpha"))).status_code == 200


async def test_a_minted_token_sees_no_more_than_its_minter(
    http: httpx.AsyncClient, t: Tenant
) -> None:
    u = _uid()
    beta = (
        await _write(
            http, t, u, "用户的 beta 合同编号 Vega", scope=BETA, sensitivity="confidential"
        )
    )["fact"]
    alpha = (await _write(http, t, u, "用户在 alpha 项目负责前端", scope=ALPHA))["fact"]
    minted = await http.post(f"/v1/users/{u}/tokens", json={}, headers=t.h("alpha"))
    assert minted.json()["scopes"] == [ALPHA] and minted.json()["max_sensitivity"] == "personal"
    token = {"Authorization": f"Bearer {minted.json()['token']}"}
    listed = (await http.get("/v1/me/facts", headers=token)).json()
    assert [f["id"] for f in listed["items"]] == [alpha["id"]]
    patch = await http.patch(
        f"/v1/me/facts/{beta['id']}", json={"statement": "改掉"}, headers=token
    )
    assert patch.status_code == 404
    assert (await http.delete(f"/v1/me/facts/{beta['id']}", headers=token)).status_code == 404
    export = await http.get("/v1/me/export", headers=token)
    assert export.status_code == 200 and "Vega" not in export.text
    assert beta["id"] not in export.text
    # Forgetting erases every scope: a scope-limited token may not.
    gone = await http.delete("/v1/me", headers=token)
    assert gone.status_code == 403 and gone.json()["error"]["code"] == "forbidden"
    # A token minted by an unlimited key with ceiling `restricted` sees everything.
    full = await _token(http, t, u, "full")
    ids = {f["id"] for f in (await http.get("/v1/me/facts", headers=full)).json()["items"]}
    assert ids == {alpha["id"], beta["id"]}


async def test_session_hint_stays_in_its_scope(http: httpx.AsyncClient, t: Tenant) -> None:
    u = _uid()
    sid = f"s-{uuid.uuid4().hex[:8]}"
    turn = {"user_id": u, "role": "user", "content": "我想订下周五去上海的高铁票", "scope": BETA}
    assert (
        await http.post(f"/v1/sessions/{sid}/turns", json=turn, headers=t.h("full"))
    ).status_code == 201
    await http.put(
        f"/v1/sessions/{sid}/slots", json={"slots": {"destination": "上海"}}, headers=t.h("full")
    )
    closed = (await http.post(f"/v1/sessions/{sid}/close", headers=t.h("full"))).json()
    assert closed["resume_hint"]
    q = {"query": "帮我看看行程"}
    seen = await http.post(f"/v1/users/{u}/recall", json={**q, "scope": BETA}, headers=t.h("full"))
    assert seen.json()["resume_hint"] == closed["resume_hint"]
    for key, body in (("full", q), ("alpha", q), ("alpha", {**q, "scope": ALPHA})):
        r = await http.post(f"/v1/users/{u}/recall", json=body, headers=t.h(key))
        assert r.status_code == 200 and r.json()["resume_hint"] is None
        assert "上海" not in r.json()["context"]


async def test_audit_rows_follow_scopes_and_ceiling(http: httpx.AsyncClient, t: Tenant) -> None:
    u = _uid()
    secret_fact = (
        await _write(http, t, u, "用户的离婚协议在律所 Halvorsen", sensitivity="confidential")
    )["fact"]
    beta_fact = (await _write(http, t, u, "用户负责 beta 的数据库迁移", scope=BETA))["fact"]
    plain = (await _write(http, t, u, "用户喜欢喝乌龙茶"))["fact"]

    async def audit_text(key: str) -> str:
        r = await http.get(f"/v1/users/{u}/audit?limit=200", headers=t.h(key))
        assert r.status_code == 200
        return r.text

    capped = await audit_text("ops")  # ops, ceiling `personal`
    assert "Halvorsen" not in capped and secret_fact["id"] not in capped
    assert plain["id"] in capped and beta_fact["id"] in capped
    scoped = await audit_text("alpha_ops")
    assert beta_fact["id"] not in scoped and "beta" not in scoped and plain["id"] in scoped
    everything = await audit_text("ops_full")
    assert "Halvorsen" in everything and beta_fact["id"] in everything


async def test_keys_only_create_and_revoke_within_their_rights(
    http: httpx.AsyncClient, t: Tenant
) -> None:
    for body in (
        {"role": "agent"},
        {"role": "agent", "scopes": [BETA]},
        {"role": "agent", "scopes": [ALPHA], "max_sensitivity": "restricted"},
    ):
        r = await http.post("/v1/admin/keys", json=body, headers=t.h("alpha_admin"))
        assert r.status_code == 403, body
    ok = await http.post(
        "/v1/admin/keys", json={"role": "agent", "scopes": [ALPHA]}, headers=t.h("alpha_admin")
    )
    assert ok.status_code == 201
    wide = (await http.post("/v1/admin/keys", json={"role": "admin"}, headers=t.h("admin"))).json()
    r = await http.delete(f"/v1/admin/keys/{wide['id']}", headers=t.h("alpha_admin"))
    assert r.status_code == 404
    r = await http.delete(f"/v1/admin/keys/{ok.json()['id']}", headers=t.h("alpha_admin"))
    assert r.status_code == 200


async def test_cleanup_touches_only_what_the_key_may_see(
    http: httpx.AsyncClient, t: Tenant, owner_db: asyncpg.Pool
) -> None:
    u = _uid()
    await _write(http, t, u, "用户在 beta 用 Postgres", scope=BETA)
    await _write(http, t, u, "用户在 alpha 用 Redis", scope=ALPHA)
    await _write(http, t, u, "用户的病历号在协和", sensitivity="confidential")
    flt = {"user_id": u}
    r = await http.post(
        "/v1/ops/cleanup",
        headers=t.h("alpha_ops"),
        json={"filter": {**flt, "scope": BETA}, "action": "delete"},
    )
    assert r.status_code == 403
    r = await http.post(
        "/v1/ops/cleanup",
        headers=t.h("alpha_ops"),
        json={"filter": flt, "action": "delete", "dry_run": False},
    )
    assert r.status_code == 200 and r.json()["total"] == 1  # only the alpha fact
    left = await owner_db.fetch(
        "SELECT scope, sensitivity FROM facts WHERE tenant_id = $1 AND user_id = $2"
        " AND status = 'active'",
        t.id,
        u,
    )
    assert sorted((x["scope"], x["sensitivity"]) for x in left) == [
        ("global", "confidential"),
        (BETA, "normal"),
    ]


async def test_forget_me_needs_a_token_that_sees_everything(
    http: httpx.AsyncClient, t: Tenant
) -> None:
    u = _uid()
    await _write(http, t, u, "用户的体检报告在协和医院", sensitivity="restricted")
    capped = await _token(http, t, u, "agent")  # ceiling personal
    r = await http.delete("/v1/me", headers=capped)
    assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden"
    full = await _token(http, t, u, "full")
    assert (await http.delete("/v1/me", headers=full)).status_code == 200


async def test_history_and_delete_respect_the_ceiling_of_every_version(
    http: httpx.AsyncClient, t: Tenant
) -> None:
    u = _uid()
    v1 = (await _write(http, t, u, "用户在一家公司上班"))["fact"]
    v2 = await http.patch(
        f"/v1/users/{u}/facts/{v1['id']}",
        headers=t.h("full"),
        json={"statement": "用户在 Nordhavn 律所上班", "sensitivity": "confidential"},
    )
    assert v2.status_code == 201, v2.text
    hist = await http.get(f"/v1/users/{u}/facts/{v1['id']}/history", headers=t.h("agent"))
    assert hist.status_code == 200 and "Nordhavn" not in hist.text
    gone = await http.delete(f"/v1/users/{u}/facts/{v1['id']}", headers=t.h("agent"))
    assert gone.status_code == 403
    full = await http.get(f"/v1/users/{u}/facts/{v2.json()['fact']['id']}", headers=t.h("full"))
    assert full.status_code == 200 and full.json()["status"] == "active"


async def test_limited_keys_get_no_tenant_wide_figures_or_wider_keys(
    http: httpx.AsyncClient, t: Tenant
) -> None:
    r = await http.get("/v1/ops/stats", headers=t.h("alpha_ops"))
    assert r.status_code == 403
    assert (await http.get("/v1/ops/stats", headers=t.h("ops"))).status_code == 200
    listed = (await http.get("/v1/admin/keys?limit=200", headers=t.h("alpha_admin"))).json()
    assert listed["items"] and all(
        k["scopes"] and set(k["scopes"]) <= {ALPHA} for k in listed["items"]
    )
    everything = (await http.get("/v1/admin/keys?limit=200", headers=t.h("full"))).json()
    assert len(everything["items"]) > len(listed["items"])


async def test_a_secret_in_the_predicate_is_refused(
    http: httpx.AsyncClient, t: Tenant, owner_db: asyncpg.Pool
) -> None:
    u = _uid()
    token = "ghp_" + "a1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p6q7r8"
    r = await http.post(
        f"/v1/users/{u}/facts",
        headers=t.h(),
        json={
            "type": "semantic",
            "predicate": token,
            "value": "x",
            "statement": "用户喜欢 x",
            "source": {"kind": "explicit_instruction"},
        },
    )
    assert r.status_code == 422 and r.json()["error"]["code"] == "secret_in_identifier"
    assert (
        await owner_db.fetchval(
            "SELECT count(*) FROM facts WHERE tenant_id = $1 AND user_id = $2", t.id, u
        )
        == 0
    )


async def test_a_recall_under_an_idempotency_key_is_not_stored(
    http: httpx.AsyncClient, t: Tenant, owner_db: asyncpg.Pool
) -> None:
    u = _uid()
    await _write(http, t, u, "用户住在榆树街五号")
    k = {"Idempotency-Key": f"r-{uuid.uuid4()}"}
    for _ in range(2):
        r = await http.post(
            f"/v1/users/{u}/recall", json={"query": "住在哪"}, headers=t.h("agent", **k)
        )
        assert r.status_code == 200 and "idempotent-replayed" not in r.headers
    await asyncio.sleep(0.3)
    assert (
        await owner_db.fetchval(
            "SELECT count(*) FROM idempotency WHERE tenant_id = $1 AND path LIKE '%/recall'", t.id
        )
        == 0
    )
