"""Session memory over HTTP (docs/sessions.md, docs/sessions.md#turns-and-slots, docs/tiers.md)."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import httpx

from tests.conftest import Tenant

U = "u-sess"


def turn(content: str, role: str = "user", user: str = U, **kw: Any) -> dict[str, Any]:
    return {"user_id": user, "role": role, "content": content, **kw}


async def test_first_turn_creates_then_appends_and_owner_is_fixed(
    client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
) -> None:
    sid = f"s-{uuid.uuid4().hex[:8]}"
    r1 = await client.post(
        f"/v1/sessions/{sid}/turns", json=turn("我想订一张去上海的机票"), headers=tenant.h()
    )
    assert r1.status_code == 201, r1.text
    assert r1.json()["created"] is True and r1.json()["job_id"]
    r2 = await client.post(
        f"/v1/sessions/{sid}/turns",
        json=turn("好的，哪天出发？", role="assistant"),
        headers=tenant.h(),
    )
    assert r2.status_code == 200 and r2.json()["turns"] == 2 and r2.json()["job_id"] is None
    r3 = await client.post(
        f"/v1/sessions/{sid}/turns", json=turn("hi", user="someone-else"), headers=tenant.h()
    )
    assert r3.status_code == 409 and r3.json()["error"]["code"] == "conflict"

    # another tenant: the session does not exist for them
    for method, path, body in [
        ("GET", f"/v1/sessions/{sid}", None),
        ("POST", f"/v1/sessions/{sid}/close", None),
        ("PUT", f"/v1/sessions/{sid}/slots", {"slots": {"x": 1}}),
    ]:
        r = await client.request(method, path, json=body, headers=other_tenant.h())
        assert r.status_code == 404, (method, path, r.text)
    r = await client.get(f"/v1/sessions/{sid}", headers=tenant.h())
    assert r.status_code == 200
    body = r.json()
    assert body["user_id"] == U and body["scope"] == "global" and not body["closed"]
    assert [t["role"] for t in body["turns"]] == ["user", "assistant"]
    assert body["created_at"] and body["last_turn_at"]
    # a retried turn (same turn_id) is not appended twice
    for _ in range(2):
        r = await client.post(
            f"/v1/sessions/{sid}/turns", json=turn("去程周五", turn_id="t-dup"), headers=tenant.h()
        )
    assert r.status_code == 200 and r.json()["duplicate"] is True
    got = (await client.get(f"/v1/sessions/{sid}", headers=tenant.h())).json()
    assert [t["turn_id"] for t in got["turns"]].count("t-dup") == 1


async def test_invalid_ids_and_sizes(client: httpx.AsyncClient, tenant: Tenant) -> None:
    r = await client.post("/v1/sessions/bad%20id/turns", json=turn("x"), headers=tenant.h())
    assert r.status_code == 422
    r = await client.post(
        "/v1/sessions/s1/turns", json=turn("x" * (16 * 1024 + 1)), headers=tenant.h()
    )
    assert r.status_code == 413
    r = await client.post("/v1/sessions/s1/turns", json=turn("x", role="robot"), headers=tenant.h())
    assert r.status_code == 422


async def test_slots_merge_and_turns_are_redacted_and_capped(
    client: httpx.AsyncClient, tenant: Tenant, app: Any
) -> None:
    sid = f"s-{uuid.uuid4().hex[:8]}"
    secret = "sk-proj-abcdefghijklmnopqrstuvwx1234567890"
    r = await client.post(
        f"/v1/sessions/{sid}/turns", json=turn(f"my key is {secret}"), headers=tenant.h()
    )
    assert r.status_code == 201
    r = await client.put(
        f"/v1/sessions/{sid}/slots",
        json={"slots": {"city": "上海", "date": "周五", "token": secret}},
        headers=tenant.h(),
    )
    assert r.status_code == 200, r.text
    r = await client.put(
        f"/v1/sessions/{sid}/slots", json={"date": "周六", "token": None}, headers=tenant.h()
    )
    assert r.json()["slots"] == {"city": "上海", "date": "周六"}
    redis = app.state.ctx.redis
    async for key in redis.scan_iter(match=f"mg:{{{tenant.id}*"):
        kind = await redis.type(key)
        if kind == b"list":
            values = await redis.lrange(key, 0, -1)
        elif kind == b"hash":
            values = list((await redis.hgetall(key)).values())
        else:
            continue
        assert not any(secret.encode() in v for v in values), key
    # the list is capped at the policy's max_turns
    await client.put(
        "/v1/admin/policy", json={"session": {"max_turns": 3}}, headers=tenant.h("admin")
    )
    app.state.ctx.policies.invalidate(tenant.id)
    for i in range(5):
        await client.post(
            f"/v1/sessions/{sid}/turns", json=turn(f"第{i}句", role="assistant"), headers=tenant.h()
        )
    got = (await client.get(f"/v1/sessions/{sid}", headers=tenant.h())).json()
    assert len(got["turns"]) == 3 and got["turn_count"] == 6
    assert got["turns"][-1]["content"] == "第4句"


async def test_user_turns_go_to_extraction_and_set_last_interaction(
    client: httpx.AsyncClient, tenant: Tenant, owner_db: asyncpg.Pool
) -> None:
    sid = f"s-{uuid.uuid4().hex[:8]}"
    # near now: the idle-sweep test sweeps every tenant, and an old summary would then be
    # expired at once by the TTL sweep of another test
    pinned = (datetime.now(UTC) - timedelta(minutes=1)).replace(microsecond=0).isoformat()
    r = await client.post(
        f"/v1/sessions/{sid}/turns",
        json=turn("记住我喜欢用表格输出"),
        headers=tenant.h(**{"X-Memgate-Now": pinned}),
    )
    job_id = r.json()["job_id"]
    job = await owner_db.fetchrow(
        "SELECT kind, user_id, payload FROM jobs WHERE id = $1", uuid.UUID(job_id)
    )
    assert job["kind"] == "observe" and job["user_id"] == U
    payload = json.loads(job["payload"])
    assert payload["session_id"] == sid and payload["messages"][0]["role"] == "user"
    state = await owner_db.fetchrow(
        "SELECT last_interaction_at FROM user_state WHERE tenant_id = $1 AND user_id = $2",
        tenant.id,
        U,
    )
    assert state["last_interaction_at"] == datetime.fromisoformat(pinned)


async def test_close_writes_one_episodic_summary_and_hint(
    client: httpx.AsyncClient, tenant: Tenant, owner_db: asyncpg.Pool, app: Any
) -> None:
    sid = f"s-{uuid.uuid4().hex[:8]}"
    await client.post(
        f"/v1/sessions/{sid}/turns", json=turn("我想订下周五去上海的高铁票"), headers=tenant.h()
    )
    await client.post(
        f"/v1/sessions/{sid}/turns",
        json=turn("好的，几点出发？", role="assistant"),
        headers=tenant.h(),
    )
    await client.post(
        f"/v1/sessions/{sid}/turns", json=turn("上午九点左右，二等座"), headers=tenant.h()
    )
    await client.put(
        f"/v1/sessions/{sid}/slots", json={"slots": {"destination": "上海"}}, headers=tenant.h()
    )
    r = await client.post(f"/v1/sessions/{sid}/close", headers=tenant.h())
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["closed"] and body["decision"] == "written" and body["fact_id"]
    assert "上海" in body["summary"] and "destination=上海" in body["resume_hint"]
    again = await client.post(f"/v1/sessions/{sid}/close", headers=tenant.h())
    assert again.status_code == 200 and again.json()["already_closed"] is True
    assert again.json()["fact_id"] == body["fact_id"]

    facts = (await client.get(f"/v1/users/{U}/facts?type=episodic", headers=tenant.h())).json()
    assert len(facts["items"]) == 1
    f = facts["items"][0]
    assert f["source"]["kind"] == "system" and f["source"]["evidence"] == f"session:{sid}"
    assert f["statement"] == body["summary"]
    state = await owner_db.fetchrow(
        """SELECT last_session_id, last_session_hint FROM user_state
           WHERE tenant_id = $1 AND user_id = $2""",
        tenant.id,
        U,
    )
    assert state["last_session_id"] == sid and state["last_session_hint"] == body["resume_hint"]
    # closed: kept for retain_hours, then Redis may expire it
    ttl = await app.state.ctx.redis.ttl(f"mg:{{{tenant.id}:{U}}}:sess:{sid}")
    assert 0 < ttl <= 24 * 3600
    actions = [
        r["action"]
        for r in await owner_db.fetch(
            "SELECT action FROM audit_events WHERE tenant_id = $1 ORDER BY id", tenant.id
        )
    ]
    for expected in ("session_open", "session_slots", "write", "session_close"):
        assert expected in actions
    # a later turn reopens it: open sessions carry no TTL
    await client.post(f"/v1/sessions/{sid}/turns", json=turn("还有回程"), headers=tenant.h())
    assert await app.state.ctx.redis.ttl(f"mg:{{{tenant.id}:{U}}}:sess:{sid}") == -1
    assert (await client.get(f"/v1/sessions/{sid}", headers=tenant.h())).json()["closed"] is False


async def test_session_survives_an_api_restart(
    client: httpx.AsyncClient, tenant: Tenant, migrated: Any
) -> None:
    from app.config import get_settings
    from app.main import create_app

    sid = f"s-{uuid.uuid4().hex[:8]}"
    await client.post(
        f"/v1/sessions/{sid}/turns", json=turn("我在找北京的公寓"), headers=tenant.h()
    )
    await client.put(f"/v1/sessions/{sid}/slots", json={"city": "北京"}, headers=tenant.h())
    second = create_app(get_settings())
    async with second.router.lifespan_context(second):
        transport = httpx.ASGITransport(app=second)
        async with httpx.AsyncClient(transport=transport, base_url="http://other.test") as c2:
            r = await c2.get(f"/v1/sessions/{sid}", headers=tenant.h())
    assert r.status_code == 200
    assert r.json()["slots"] == {"city": "北京"}
    assert r.json()["turns"][0]["content"] == "我在找北京的公寓"


async def test_idle_session_is_swept_into_summary_that_recall_returns(
    client: httpx.AsyncClient, tenant: Tenant, owner_db: asyncpg.Pool, app: Any
) -> None:
    from workers.sessions import sweep_idle_sessions

    user = "u-idle"
    sid = f"s-{uuid.uuid4().hex[:8]}"
    start = datetime.now(UTC) - timedelta(minutes=45)
    at = {"X-Memgate-Now": start.isoformat()}
    await client.post(
        f"/v1/sessions/{sid}/turns",
        json=turn("I need a plumber for the kitchen sink", user=user),
        headers=tenant.h(**at),
    )
    await client.put(
        f"/v1/sessions/{sid}/slots", json={"slots": {"zip": "10001"}}, headers=tenant.h(**at)
    )
    # not idle yet at start + 10 minutes
    assert await sweep_idle_sessions(app.state.ctx, start + timedelta(minutes=10)) >= 0
    assert (await client.get(f"/v1/sessions/{sid}", headers=tenant.h())).json()["closed"] is False
    closed = await sweep_idle_sessions(app.state.ctx, start + timedelta(minutes=31))
    assert closed >= 1
    got = (await client.get(f"/v1/sessions/{sid}", headers=tenant.h())).json()
    assert got["closed"] is True and "plumber" in got["summary"]
    hint = await owner_db.fetchval(
        "SELECT last_session_hint FROM user_state WHERE tenant_id = $1 AND user_id = $2",
        tenant.id,
        user,
    )
    assert hint and "zip=10001" in hint and "plumber" in hint
    # a second sweep (another worker) closes nothing twice
    await sweep_idle_sessions(app.state.ctx, start + timedelta(minutes=32))
    facts = (await client.get(f"/v1/users/{user}/facts?type=episodic", headers=tenant.h())).json()[
        "items"
    ]
    assert len(facts) == 1
    r = await client.post(f"/v1/users/{user}/recall", json={"query": "plumber"}, headers=tenant.h())
    assert r.status_code == 200, r.text
    assert r.json()["resume_hint"] == hint


async def test_user_token_cannot_use_sessions(client: httpx.AsyncClient, tenant: Tenant) -> None:
    tok = (await client.post(f"/v1/users/{U}/tokens", json={}, headers=tenant.h())).json()
    r = await client.get("/v1/sessions/s-any", headers={"Authorization": f"Bearer {tok['token']}"})
    assert r.status_code == 403


async def test_close_uses_the_llm_summary_when_configured_and_falls_back(
    tenant: Tenant, migrated: Any
) -> None:
    from app.config import Settings
    from app.main import create_app
    from tests.fakes.openai_fake import OpenAIFake, Reply

    with OpenAIFake() as fake:
        llm_app = create_app(Settings(MEMGATE_LLM_BASE_URL=fake.base_url, MEMGATE_LLM_TIMEOUT=2))
        async with llm_app.router.lifespan_context(llm_app):
            transport = httpx.ASGITransport(app=llm_app)
            async with httpx.AsyncClient(transport=transport, base_url="http://llm.test") as c:
                user = f"u-llm-{uuid.uuid4().hex[:6]}"
                sid = f"s-{uuid.uuid4().hex[:8]}"
                await c.post(
                    f"/v1/sessions/{sid}/turns",
                    headers=tenant.h(),
                    json=turn("帮我比较三款笔记本电脑", user=user),
                )
                fake.chat_script.append(
                    Reply.chat(
                        {
                            "summary": "用户在比较三款笔记本电脑的性价比。",
                            "resume_hint": "上次在比较三款笔记本，可从价格对比接着聊。",
                        }
                    )
                )
                body = (await c.post(f"/v1/sessions/{sid}/close", headers=tenant.h())).json()
                assert body["decision"] == "written"
                assert body["summary"] == "用户在比较三款笔记本电脑的性价比。"
                assert body["resume_hint"] == "上次在比较三款笔记本，可从价格对比接着聊。"
                sent = fake.chat_requests[-1].json["messages"][1]["content"]
                assert "帮我比较三款笔记本电脑" in sent

                # malformed model output: the extractive summary is used instead
                sid2 = f"s-{uuid.uuid4().hex[:8]}"
                await c.post(
                    f"/v1/sessions/{sid2}/turns",
                    headers=tenant.h(),
                    json=turn("我想订去杭州的酒店", user=user),
                )
                fake.chat_script.append(Reply.chat("not json {"))
                body2 = (await c.post(f"/v1/sessions/{sid2}/close", headers=tenant.h())).json()
                assert body2["decision"] == "written"
                assert body2["summary"].startswith("会话摘要")
