"""User tokens and "facts about me" over HTTP (docs/isolation.md#user-tokens, docs/api.md#endpoints,
docs/isolation.md#keys-and-roles, docs/isolation.md#facts-about-me, docs/lifecycle.md#forget-me)."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta
from typing import Any

import asyncpg
import httpx

from tests.conftest import Tenant

A, B = "u-alice", "u-bob"


def fact(statement: str, **kw: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "type": "semantic",
        "statement": statement,
        "source": {"kind": kw.pop("kind", "user_message")},
    }
    body.update(kw)
    return body


async def write(client: httpx.AsyncClient, t: Tenant, user: str, body: dict[str, Any]) -> str:
    r = await client.post(f"/v1/users/{user}/facts", json=body, headers=t.h())
    assert r.status_code in (200, 201), r.text
    return str(r.json()["fact"]["id"])


async def token(client: httpx.AsyncClient, t: Tenant, user: str, **body: Any) -> dict[str, str]:
    r = await client.post(f"/v1/users/{user}/tokens", json=body, headers=t.h("portal"))
    assert r.status_code == 201, r.text
    out = r.json()
    assert out["token"].startswith("mgu_") and out["user_id"] == user
    return {"Authorization": f"Bearer {out['token']}"}


async def test_token_reaches_only_me(client: httpx.AsyncClient, tenant: Tenant) -> None:
    me = await token(client, tenant, A)
    fid = await write(client, tenant, A, fact("用户喜欢爵士乐"))
    for method, path in [
        ("GET", f"/v1/users/{A}/facts"),
        ("GET", f"/v1/users/{A}/facts/{fid}"),
        ("POST", f"/v1/users/{A}/recall"),
        ("POST", f"/v1/users/{A}/tokens"),
        ("GET", "/v1/admin/keys"),
        ("GET", "/v1/admin/policy"),
        ("GET", "/v1/ops/stats"),
        ("POST", "/v1/ops/cleanup"),
        ("GET", "/v1/sessions/s1"),
    ]:
        r = await client.request(method, path, json={}, headers=me)
        assert r.status_code == 403, (method, path, r.status_code)
        assert r.json()["error"]["code"] == "forbidden"
    # and keys do not reach /v1/me
    r = await client.get("/v1/me/facts", headers=tenant.h("admin"))
    assert r.status_code == 403


async def test_token_ttl_and_expiry(client: httpx.AsyncClient, tenant: Tenant) -> None:
    r = await client.post(
        f"/v1/users/{A}/tokens", json={"ttl_seconds": 31 * 24 * 3600}, headers=tenant.h()
    )
    assert r.status_code == 422
    r = await client.post(f"/v1/users/{A}/tokens", headers=tenant.h())
    assert r.status_code == 201
    expires = datetime.fromisoformat(r.json()["expires_at"])
    hdr = {"Authorization": f"Bearer {r.json()['token']}"}
    assert (await client.get("/v1/me/facts", headers=hdr)).status_code == 200
    later = (expires + timedelta(seconds=1)).isoformat()
    r = await client.get("/v1/me/facts", headers={**hdr, "X-Memgate-Now": later})
    assert r.status_code == 401 and r.json()["error"]["code"] == "token_expired"
    r = await client.get("/v1/me/facts", headers={"Authorization": "Bearer mgu_forged.sig"})
    assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"


async def test_user_a_never_sees_or_changes_b(
    client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
) -> None:
    a_fact = await write(client, tenant, A, fact("Alice prefers tea", kind="explicit_instruction"))
    b_fact = await write(client, tenant, B, fact("Bob prefers coffee"))
    x_fact = await write(client, other_tenant, A, fact("Other-tenant Alice likes chess"))
    me_a = await token(client, tenant, A)
    items = (await client.get("/v1/me/facts", headers=me_a)).json()["items"]
    assert [i["id"] for i in items] == [a_fact]
    assert items[0]["why"].startswith("you said it explicitly on")
    for fid in (b_fact, x_fact):
        assert (
            await client.patch(f"/v1/me/facts/{fid}", json={"statement": "hacked"}, headers=me_a)
        ).status_code == 404
        assert (await client.delete(f"/v1/me/facts/{fid}", headers=me_a)).status_code == 404
    # B's and the other tenant's facts are untouched
    r = await client.get(f"/v1/users/{B}/facts/{b_fact}", headers=tenant.h())
    assert r.json()["statement"] == "Bob prefers coffee"
    r = await client.get(f"/v1/users/{A}/facts/{x_fact}", headers=other_tenant.h())
    assert r.json()["statement"] == "Other-tenant Alice likes chess"
    # a token of the other tenant for the same user id sees only that tenant's facts
    me_x = await token(client, other_tenant, A)
    items = (await client.get("/v1/me/facts", headers=me_x)).json()["items"]
    assert [i["id"] for i in items] == [x_fact]


async def test_correct_delete_and_why(
    client: httpx.AsyncClient, tenant: Tenant, owner_db: asyncpg.Pool
) -> None:
    fid = await write(
        client,
        tenant,
        A,
        {
            "type": "profile",
            "predicate": "delivery_carrier",
            "value": "圆通",
            "statement": "用户偏好圆通快递",
            "source": {"kind": "user_message"},
        },
    )
    await client.post(
        f"/v1/users/{A}/facts",
        json={
            "type": "profile",
            "predicate": "delivery_carrier",
            "value": "圆通",
            "statement": "用户偏好圆通快递",
            "source": {"kind": "user_message"},
        },
        headers=tenant.h(),
    )
    me = await token(client, tenant, A)
    items = (await client.get("/v1/me/facts?lang=zh", headers=me)).json()["items"]
    assert items[0]["why"] == "在 2 次对话中出现过"
    r = await client.patch(
        f"/v1/me/facts/{fid}",
        json={
            "value": "顺丰",
            "statement": "用户偏好顺丰快递",
            "source": {"kind": "agent_inference"},
        },
        headers=me,
    )
    assert r.status_code == 201, r.text
    new = r.json()["fact"]
    assert new["source"]["kind"] == "explicit_instruction" and new["version"] == 2
    assert r.json()["superseded"] == [fid]
    r = await client.delete(f"/v1/me/facts/{new['id']}", headers=me)
    assert r.status_code == 200 and r.json() == {"id": new["id"], "status": "deleted"}
    assert (await client.get("/v1/me/facts", headers=me)).json()["items"] == []
    n = await owner_db.fetchval(
        "SELECT count(*) FROM tombstones WHERE tenant_id = $1 AND user_id = $2", tenant.id, A
    )
    assert n > 0
    actions = {
        r["action"]
        for r in await owner_db.fetch(
            "SELECT action FROM audit_events WHERE tenant_id = $1 AND user_id = $2", tenant.id, A
        )
    }
    assert {"token_mint", "write", "update", "delete"} <= actions


async def _pending_candidate(
    client: httpx.AsyncClient, tenant: Tenant, user: str, statement: str
) -> str:
    await client.put(
        "/v1/admin/policy", json={"sensitive": {"ask_user": True}}, headers=tenant.h("admin")
    )
    r = await client.post(
        f"/v1/users/{user}/facts",
        json=fact(statement, predicate="health_condition", value=statement),
        headers=tenant.h(),
    )
    assert r.status_code == 202, r.text
    return str(r.json()["candidate"])


async def test_candidates_confirm_and_reject(
    client: httpx.AsyncClient, tenant: Tenant, app: Any
) -> None:
    c1 = await _pending_candidate(client, tenant, A, "用户有高血压")
    app.state.ctx.policies.invalidate(tenant.id)
    c2 = await _pending_candidate(client, tenant, A, "用户有糖尿病")
    cb = await _pending_candidate(client, tenant, B, "用户有哮喘")
    me = await token(client, tenant, A)
    ids = {c["id"] for c in (await client.get("/v1/me/candidates", headers=me)).json()["items"]}
    assert ids == {c1, c2}
    assert (await client.post(f"/v1/me/candidates/{cb}/confirm", headers=me)).status_code == 404
    r = await client.post(f"/v1/me/candidates/{c1}/confirm", headers=me)
    assert r.status_code == 201, r.text
    assert r.json()["fact"]["source"]["kind"] == "explicit_instruction"
    assert (await client.post(f"/v1/me/candidates/{c1}/confirm", headers=me)).status_code == 409
    r = await client.post(f"/v1/me/candidates/{c2}/reject", headers=me)
    assert r.json() == {"id": c2, "status": "rejected"}
    assert (await client.get("/v1/me/candidates", headers=me)).json()["items"] == []


async def test_export_round_trips_every_fact(client: httpx.AsyncClient, tenant: Tenant) -> None:
    first = await write(
        client,
        tenant,
        A,
        {
            "type": "profile",
            "predicate": "preferred_output_format",
            "value": "table",
            "statement": "用户偏好表格输出",
            "source": {"kind": "user_message"},
            "valid_from": "2026-01-01T00:00:00Z",
        },
    )
    r = await client.patch(
        f"/v1/users/{A}/facts/{first}",
        json={"value": "markdown", "statement": "用户偏好 Markdown 输出"},
        headers=tenant.h(),
    )
    second = r.json()["fact"]["id"]
    await write(client, tenant, A, fact("用户在用 Python 3.12", scope="project:clarity"))
    sid = f"s-{uuid.uuid4().hex[:6]}"
    await client.post(
        f"/v1/sessions/{sid}/turns",
        json={"user_id": A, "role": "user", "content": "hello there friend"},
        headers=tenant.h(),
    )
    me = await token(client, tenant, A)
    export = (await client.get("/v1/me/export", headers=me)).json()
    listed: dict[str, Any] = {}
    for status in ("active", "superseded", "archived"):
        for f in (
            await client.get(f"/v1/users/{A}/facts?status={status}&limit=200", headers=tenant.h())
        ).json()["items"]:
            listed[f["id"]] = f
    exported = {f["id"]: f for f in export["facts"]}
    assert set(exported) == set(listed)
    for fid, f in listed.items():
        for k in ("statement", "value", "predicate", "scope", "status", "version"):
            assert exported[fid][k] == f[k], (fid, k)
    history = (
        await client.get(f"/v1/users/{A}/facts/{second}/history", headers=tenant.h())
    ).json()["items"]
    assert exported[second]["history"] == [h["id"] for h in history] == [first, second]
    assert [s["id"] for s in export["sessions"]] == [sid]
    assert export["state"]["last_interaction_at"]
    assert export["audit"]


async def test_forget_me_leaves_no_trace(
    client: httpx.AsyncClient, tenant: Tenant, owner_db: asyncpg.Pool, app: Any
) -> None:
    user = "u-forget"
    mark = "zebracorn"  # a distinctive string: it must not survive anywhere
    bob_fid = await write(client, tenant, B, fact(f"Bob keeps a {mark}-free diet"))
    fid = await write(
        client,
        tenant,
        user,
        {
            "type": "profile",
            "predicate": "preferred_cuisine",
            "value": f"{mark} noodles",
            "statement": f"The user loves {mark} noodles",
            "source": {"kind": "user_message"},
        },
    )
    await client.patch(
        f"/v1/users/{user}/facts/{fid}",
        json={"value": f"{mark} soup", "statement": f"The user loves {mark} soup"},
        headers=tenant.h(**{"Idempotency-Key": f"k-{uuid.uuid4()}"}),
    )
    await write(client, tenant, user, fact(f"The user rides a {mark} bike", kind="document"))
    await _pending_candidate(client, tenant, user, f"用户有{mark}过敏症")
    await client.post(
        f"/v1/users/{user}/observations",
        json={"messages": [{"role": "user", "content": f"I own a {mark} farm"}]},
        headers=tenant.h(),
    )
    sid = f"s-{uuid.uuid4().hex[:6]}"
    await client.post(
        f"/v1/sessions/{sid}/turns",
        json={"user_id": user, "role": "user", "content": f"my {mark} is sick"},
        headers=tenant.h(),
    )
    await client.put(f"/v1/sessions/{sid}/slots", json={"pet": mark}, headers=tenant.h())
    r = await client.post(
        f"/v1/users/{user}/recall", json={"query": f"{mark} soup"}, headers=tenant.h()
    )
    assert r.status_code == 200 and r.json()["facts"]
    recalled = [uuid.UUID(f["id"]) for f in r.json()["facts"]]
    ctx = app.state.ctx
    await ctx.recall_log.flush()  # the recall's hit counters are written
    assert await owner_db.fetchval(
        "SELECT count(*) FROM fact_hits WHERE fact_id = ANY($1)", recalled
    ) == len(recalled)

    me = await token(client, tenant, user)
    other = await token(client, tenant, user)
    r = await client.delete("/v1/me", headers=me)
    assert r.status_code == 200, r.text
    counts = r.json()["deleted"]
    assert counts["facts"] == 3 and counts["candidates"] == 1 and counts["sessions"] == 1
    assert counts["tokens_revoked"] == 2
    # the tokens are revoked
    assert (await client.get("/v1/me/facts", headers=me)).status_code == 401
    assert (await client.get("/v1/me/facts", headers=other)).status_code in (401,)

    # scan every text/jsonb column of every table for the user's words (Bob's own rows,
    # which say it too, are the control: they must survive)
    cols = await owner_db.fetch(
        """SELECT c.table_name, c.column_name,
                  EXISTS (SELECT 1 FROM information_schema.columns u
                          WHERE u.table_name = c.table_name AND u.column_name = 'user_id'
                            AND u.table_schema = 'public') AS has_user
           FROM information_schema.columns c
           WHERE c.table_schema = 'public' AND c.data_type IN ('text', 'jsonb', 'json', 'ARRAY')
             AND c.table_name IN (SELECT tablename FROM pg_tables WHERE schemaname = 'public')"""
    )
    hits, bob_hits = [], 0
    for c in cols:
        sql = f'SELECT count(*) FROM "{c["table_name"]}" WHERE "{c["column_name"]}"::text ILIKE $1'
        n = await owner_db.fetchval(
            sql + (" AND user_id IS DISTINCT FROM $2" if c["has_user"] else " AND $2 = $2"),
            f"%{mark}%",
            B,
        )
        if n:
            hits.append((c["table_name"], c["column_name"], n))
        if c["has_user"]:
            bob_hits += await owner_db.fetchval(sql + " AND user_id = $2", f"%{mark}%", B)
    assert hits == [] and bob_hits > 0
    assert (
        await owner_db.fetchval(
            "SELECT count(*) FROM facts WHERE tenant_id = $1 AND user_id = $2", tenant.id, user
        )
        == 0
    )
    assert (
        await owner_db.fetchval(  # the hit counters went with the facts
            "SELECT count(*) FROM fact_hits WHERE fact_id = ANY($1)", recalled
        )
        == 0
    )
    assert (
        await owner_db.fetchval(
            "SELECT count(*) FROM facts WHERE statement ILIKE $1 AND id <> $2",
            f"%{mark}%",
            uuid.UUID(bob_fid),
        )
        == 0
    )
    for table in ("candidates", "recall_log", "jobs", "user_state"):
        assert (
            await owner_db.fetchval(
                f"SELECT count(*) FROM {table} WHERE tenant_id = $1 AND user_id = $2",
                tenant.id,
                user,
            )
            == 0
        ), table
    # audit keeps the trail, never the content; the forget event is there
    details = await owner_db.fetch(
        "SELECT action, detail FROM audit_events WHERE tenant_id = $1 AND user_id = $2",
        tenant.id,
        user,
    )
    assert any(d["action"] == "forget_me" for d in details)
    assert all(mark not in json.dumps(d["detail"]) for d in details)
    assert (
        await owner_db.fetchval(
            "SELECT count(*) FROM tombstones WHERE tenant_id = $1 AND user_id = $2", tenant.id, user
        )
        > 0
    )
    # Redis: nothing of the user's session remains
    async for key in ctx.redis.scan_iter(match=f"mg:{{{tenant.id}*"):
        assert sid not in key.decode() and user not in key.decode()
    # a later recall returns nothing; Bob is untouched
    r = await client.post(
        f"/v1/users/{user}/recall", json={"query": f"{mark} soup"}, headers=tenant.h()
    )
    assert r.status_code == 200 and r.json()["facts"] == [] and r.json()["resume_hint"] is None
    r = await client.get(f"/v1/users/{B}/facts/{bob_fid}", headers=tenant.h())
    assert r.status_code == 200


async def test_recall_flushed_after_forget_me_writes_nothing_back(
    client: httpx.AsyncClient, tenant: Tenant, owner_db: asyncpg.Pool, app: Any
) -> None:
    """A recall that read the user's facts before forget-me, flushed after it (another
    replica's buffer, a recall in flight): its log row and hit counters are dropped, while
    other users' entries in the same batch and the user's later recalls are written."""
    from app import clock
    from app.recall import RecallLog
    from app.store.recall import FORGET_MARGIN, LogEntry

    user, other = f"u-late-{uuid.uuid4().hex[:6]}", f"u-keep-{uuid.uuid4().hex[:6]}"
    fid = uuid.UUID(await write(client, tenant, user, fact("The user collects teapots")))
    other_fid = uuid.UUID(await write(client, tenant, other, fact("The user collects stamps")))
    before = clock.now()
    r = await client.delete("/v1/me", headers=await token(client, tenant, user))
    assert r.status_code == 200, r.text

    def entry(u: str, ids: list[uuid.UUID], at: datetime) -> LogEntry:
        return LogEntry(
            tenant_id=tenant.id,
            trace_id=f"t-{uuid.uuid4().hex}",
            user_id=u,
            scope="global",
            fact_ids=ids,
            detail={"facts": []},
            tokens=10,
            tier="continue",
            at=at,
        )

    late, kept = entry(user, [fid], before), entry(other, [other_fid], before)
    comeback = entry(user, [], before + 2 * FORGET_MARGIN)  # the user returns later
    await RecallLog.write(app.state.ctx.pool, [late, kept, comeback])

    logged = {
        r["trace_id"]
        for r in await owner_db.fetch(
            "SELECT trace_id FROM recall_log WHERE tenant_id = $1 AND user_id = ANY($2)",
            tenant.id,
            [user, other],
        )
    }
    assert logged == {kept.trace_id, comeback.trace_id}
    assert await owner_db.fetchval("SELECT count(*) FROM fact_hits WHERE fact_id = $1", fid) == 0
    assert await owner_db.fetchval("SELECT hits FROM fact_hits WHERE fact_id = $1", other_fid) == 1
