"""Recall over HTTP against the real PostgreSQL: isolation, channels, budget, tiers, the
recall log and traces, and re-embedding to another model while recall keeps answering."""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import httpx
import pytest

from app.context import AppContext
from app.memory.packing import HEADER, count_tokens
from app.providers.embedders import OpenAIEmbedder
from app.store import jobs as jobs_store
from app.store import recall as recall_store
from app.store.db import tenant_tx
from app.store.migrate import migrate, prune_routines
from tests.conftest import Tenant
from tests.fakes.openai_fake import OpenAIFake
from workers import reembed as reembed_worker
from workers.jobs import run_job
from workers.settings import HANDLERS

SRC_USER = {"kind": "user_message"}
SRC_EXPLICIT = {"kind": "explicit_instruction"}


async def write(
    client: httpx.AsyncClient,
    tenant: Tenant,
    user: str,
    statement: str,
    *,
    type: str = "semantic",
    predicate: str | None = None,
    value: Any = None,
    scope: str = "global",
    source: dict[str, str] | None = None,
    role: str = "agent",
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "type": type,
        "statement": statement,
        "scope": scope,
        "source": source or SRC_USER,
        **extra,
    }
    if predicate:
        body["predicate"] = predicate
        body["value"] = value if value is not None else statement
    res = await client.post(
        f"/v1/users/{user}/facts", json=body, headers={**tenant.h(role), **(headers or {})}
    )
    assert res.status_code in (200, 201), res.text
    fact: dict[str, Any] = res.json()["fact"]
    return fact


async def recall(
    client: httpx.AsyncClient,
    tenant: Tenant,
    user: str,
    query: str,
    *,
    role: str = "agent",
    headers: dict[str, str] | None = None,
    status: int = 200,
    **body: Any,
) -> dict[str, Any]:
    res = await client.post(
        f"/v1/users/{user}/recall",
        json={"query": query, **body},
        headers={**tenant.h(role), **(headers or {})},
    )
    assert res.status_code == status, res.text
    out: dict[str, Any] = res.json()
    return out


def worker_ctx(ctx: AppContext) -> dict[str, Any]:
    """arq's ctx as the worker's startup builds it."""
    return {"app": ctx, "handlers": HANDLERS}


def ids(result: dict[str, Any]) -> list[str]:
    return [f["id"] for f in result["facts"]]


def user() -> str:
    return f"u-{uuid.uuid4().hex[:8]}"


# ---------------------------------------------------------------------------- shape


async def test_response_shape_header_and_budget(client: httpx.AsyncClient, tenant: Tenant) -> None:
    u = user()
    fact = await write(
        client,
        tenant,
        u,
        "User prefers answers as a table",
        predicate="preferred_output_format",
        type="profile",
        value="table",
    )
    out = await recall(client, tenant, u, "what format should the answer use?")
    assert set(out) == {"trace_id", "facts", "context", "tokens", "tier", "resume_hint"}
    assert ids(out) == [fact["id"]]
    f = out["facts"][0]
    assert set(f) == {
        "id",
        "statement",
        "predicate",
        "value",
        "type",
        "scope",
        "source_kind",
        "confidence",
        "score",
        "channels",
        "valid_from",
        "occurred_at",
        "age_days",
        "stale",
        "contested",
    }
    assert f["value"] == "table" and f["scope"] == "global" and f["source_kind"] == "user_message"
    assert "structured" in f["channels"]
    assert 0 < f["score"] <= 1
    assert out["context"].startswith(HEADER["en"])
    assert "current turn wins" in out["context"]
    assert out["tokens"] == count_tokens(out["context"]) <= 400
    assert out["tier"] == "continue"
    assert out["trace_id"]


async def test_chinese_query_gets_chinese_block(client: httpx.AsyncClient, tenant: Tenant) -> None:
    u = user()
    await write(
        client,
        tenant,
        u,
        "用户喜欢用表格输出",
        predicate="preferred_output_format",
        type="profile",
        value="表格",
    )
    out = await recall(client, tenant, u, "回答用什么格式？")
    assert len(out["facts"]) == 1
    assert out["context"].startswith(HEADER["zh"])
    assert "以本轮为准" in out["context"]
    forced = await recall(client, tenant, u, "回答用什么格式？", lang="en")
    assert forced["context"].startswith(HEADER["en"])


async def test_empty_pool_answers_empty(client: httpx.AsyncClient, tenant: Tenant) -> None:
    out = await recall(client, tenant, user(), "anything at all?")
    assert out["facts"] == [] and out["context"] == "" and out["tokens"] == 0
    assert out["tier"] == "continue" and out["resume_hint"] is None


# ---------------------------------------------------------------------------- hard filter


async def test_other_scope_user_and_tenant_never_leak(
    client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
) -> None:
    u, other = user(), user()
    text = "The deploy key for project clarity lives in vault path ops/clarity"
    mine = await write(client, tenant, u, text, scope="project:clarity")
    # The exact same statement, so each would be the closest match on every channel.
    await write(client, tenant, u, text, scope="project:zeta")
    await write(client, tenant, other, text)
    await write(client, other_tenant, u, text, scope="project:clarity")
    await write(client, other_tenant, u, text)

    q = "where does the clarity deploy key live in vault?"
    scoped = await recall(client, tenant, u, q, scope="project:clarity", min_score=0)
    assert ids(scoped) == [mine["id"]]
    assert all(f["scope"] in ("global", "project:clarity") for f in scoped["facts"])
    # Without a scope only `global` is searched: the project fact stays out.
    assert ids(await recall(client, tenant, u, q, min_score=0)) == []
    zeta = await recall(client, tenant, u, q, scope="project:zeta", min_score=0)
    assert mine["id"] not in ids(zeta) and len(zeta["facts"]) == 1


async def test_scope_limited_key_gets_403_for_other_scope(
    client: httpx.AsyncClient, tenant_factory: Any
) -> None:
    t = await tenant_factory(limited={"role": "agent", "scopes": ["project:a"]})
    u = user()
    await recall(client, t, u, "hello there", role="limited", scope="project:a")
    await recall(client, t, u, "hello there", role="limited")  # global is always readable
    res = await client.post(
        f"/v1/users/{u}/recall", json={"query": "x", "scope": "project:b"}, headers=t.h("limited")
    )
    assert res.status_code == 403 and res.json()["error"]["code"] == "forbidden"


async def test_sensitivity_above_the_key_is_never_recalled(
    client: httpx.AsyncClient, tenant_factory: Any
) -> None:
    t = await tenant_factory(low={"role": "agent", "max_sensitivity": "normal"})
    u = user()
    fact = await write(
        client, t, u, "用户对花生过敏", predicate="allergy", value="花生", source=SRC_EXPLICIT
    )
    assert fact["sensitivity"] != "normal"
    assert ids(await recall(client, t, u, "我对什么过敏？")) == [fact["id"]]
    assert ids(await recall(client, t, u, "我对什么过敏？", role="low", min_score=0)) == []


async def test_superseded_expired_and_deleted_never_returned(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    u = user()
    old = await write(
        client,
        tenant,
        u,
        "User ships parcels with DHL",
        predicate="delivery_carrier",
        type="profile",
        value="DHL",
        source=SRC_EXPLICIT,
    )
    new = await write(
        client,
        tenant,
        u,
        "User ships parcels with SF Express",
        predicate="delivery_carrier",
        type="profile",
        value="SF Express",
        source=SRC_EXPLICIT,
    )
    short = await write(
        client, tenant, u, "User is staying at the Hilton Shanghai this week", ttl_days=2
    )
    # (a locker's access code would be refused by the gate's personal class: a place only)
    gone = await write(client, tenant, u, "User's parcel locker is the one at the Hilton")
    res = await client.delete(f"/v1/users/{u}/facts/{gone['id']}", headers=tenant.h())
    assert res.status_code == 200

    q = "which carrier should ship my parcel to the Hilton?"
    got = ids(await recall(client, tenant, u, q, min_score=0, k=50))
    assert new["id"] in got and short["id"] in got
    assert old["id"] not in got and gone["id"] not in got

    later = (datetime.now(UTC) + timedelta(days=3)).isoformat()
    got = ids(
        await recall(client, tenant, u, q, min_score=0, k=50, headers={"X-Memgate-Now": later})
    )
    assert short["id"] not in got and new["id"] in got


async def test_valid_to_in_the_past_is_not_valid_now(
    client: httpx.AsyncClient, tenant: Tenant, owner_db: asyncpg.Pool
) -> None:
    u = user()
    f = await write(
        client,
        tenant,
        u,
        "User works at Initech as a platform engineer",
        predicate="employer",
        type="profile",
        value="Initech",
    )
    q = "where do I work?"
    assert ids(await recall(client, tenant, u, q)) == [f["id"]]
    async with owner_db.acquire() as conn:
        await conn.execute(
            "UPDATE facts SET valid_to = now() - interval '1 hour' WHERE id = $1",
            uuid.UUID(f["id"]),
        )
    assert ids(await recall(client, tenant, u, q, min_score=0)) == []


# ---------------------------------------------------------------------------- channels


async def test_cross_lingual_dense(client: httpx.AsyncClient, tenant: Tenant) -> None:
    u = user()
    cat = await write(client, tenant, u, "用户养了一只叫咪咪的橘猫")
    await write(client, tenant, u, "用户每周二去健身房跑步")
    await write(client, tenant, u, "User drives a blue Volvo station wagon")

    zh = await recall(client, tenant, u, "我的宠物叫什么名字？")
    assert ids(zh)[:1] == [cat["id"]]
    assert "dense" in zh["facts"][0]["channels"]
    en = await recall(client, tenant, u, "What is my cat called?")
    assert ids(en)[:1] == [cat["id"]]
    assert "dense" in en["facts"][0]["channels"]


async def test_exact_token_found_by_keyword(client: httpx.AsyncClient, tenant: Tenant) -> None:
    u = user()
    order = await write(client, tenant, u, "用户的退货订单号是ABC123，等待退款")
    await write(client, tenant, u, "用户的常用订单备注是放门口")
    out = await recall(client, tenant, u, "ABC123 到哪了")
    assert ids(out)[:1] == [order["id"]]
    assert "keyword" in out["facts"][0]["channels"]
    en = await recall(client, tenant, u, "status of abc123?")
    assert ids(en)[:1] == [order["id"]]
    assert "keyword" in en["facts"][0]["channels"]


@pytest.mark.parametrize("query", ["我对什么过敏？", "what am I allergic to?"])
async def test_allergy_question_answered_by_structured_channel(
    client: httpx.AsyncClient, tenant: Tenant, query: str
) -> None:
    u = user()
    allergy = await write(
        client, tenant, u, "用户对花生过敏", predicate="allergy", value="花生", source=SRC_EXPLICIT
    )
    await write(client, tenant, u, "User likes jazz music on Friday evenings")
    out = await recall(client, tenant, u, query)
    assert ids(out) == [allergy["id"]]
    assert "structured" in out["facts"][0]["channels"]
    assert "花生" in out["context"]


@pytest.mark.parametrize(
    "query",
    [
        "Is amoxicillin safe for me?",
        "I have a sore throat, what medicine can I take?",
        "Is this shrimp pasta okay for me?",
        "帮我买点零食",
        "我嗓子疼，能吃什么药",
    ],
)
async def test_hard_constraints_surface_for_food_medicine_and_purchases(
    client: httpx.AsyncClient, tenant: Tenant, query: str
) -> None:
    u = user()
    allergy = await write(
        client,
        tenant,
        u,
        "用户对青霉素过敏",
        predicate="allergy",
        value="青霉素",
        source=SRC_EXPLICIT,
    )
    await write(client, tenant, u, "User likes jazz music on Friday evenings")
    out = await recall(client, tenant, u, query)
    assert allergy["id"] in ids(out)
    assert "structured" in out["facts"][ids(out).index(allergy["id"])]["channels"]


async def test_ordinary_facts_pass_default_min_score_on_one_channel(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    # A user_message fact at the default confidence, found by one channel only, is
    # tempered by its trust and confidence, not crushed below min_score.
    u = user()
    fmt = await write(
        client, tenant, u, "用户偏好用表格输出", predicate="preferred_output_format", value="table"
    )
    out = await recall(client, tenant, u, "Compare these three laptops for me")
    assert ids(out) == [fmt["id"]]
    assert 0.25 <= out["facts"][0]["score"] <= 1.0


async def test_contraction_fragments_and_filler_verbs_are_not_keywords(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    # "what's" → "s" would match every "the user's …"; "用" every "用户…用…".
    u = user()
    await write(client, tenant, u, "The user's gym is FitLife Downtown")
    await write(client, tenant, u, "用户平时用微信付款")
    for q in ("What's the boiling point of water?", "这个用哪个好"):
        out = await recall(client, tenant, u, q, min_score=0)
        assert all("keyword" not in f["channels"] for f in out["facts"]), q


async def test_keyword_query_with_quotes_and_operators_is_safe(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    u = user()
    await write(client, tenant, u, "User's favourite tea is oolong")
    for q in ["it's o'clock & | ! :* ( ) \\ '; DROP TABLE facts; --", "！！！", "a & b | c"]:
        out = await recall(client, tenant, u, q, min_score=0)
        assert isinstance(out["facts"], list)


# ---------------------------------------------------------------------------- score, k, budget


async def test_min_score_and_k(client: httpx.AsyncClient, tenant: Tenant) -> None:
    u = user()
    for place in (
        "the Louvre",
        "the Musée d'Orsay",
        "the Centre Pompidou",
        "the Rodin museum",
        "the Musée de l'Orangerie",
        "the Picasso museum",
    ):
        await write(client, tenant, u, f"User went to {place} during a Paris trip")
    q = "which museums did I visit in Paris?"
    full = await recall(client, tenant, u, q, min_score=0, k=50)
    scores = [f["score"] for f in full["facts"]]
    assert len(scores) == 6 and all(0 <= s <= 1 for s in scores)
    assert scores == sorted(scores, reverse=True)
    assert len((await recall(client, tenant, u, q, min_score=0, k=2))["facts"]) == 2
    cut = scores[2]
    kept = await recall(client, tenant, u, q, min_score=cut, k=50)
    assert all(f["score"] >= cut for f in kept["facts"]) and len(kept["facts"]) >= 3
    assert (await recall(client, tenant, u, q, min_score=1.0))["facts"] == []


@pytest.mark.parametrize(
    "body",
    [
        {"k": 51},
        {"budget_tokens": 4001},
        {"k": 0},
        {"min_score": 1.5},
        {"lang": "fr"},
        {"query": ""},
        {"query": "x" * 2001},
        {"scope": "Bad Scope"},
        {"types": ["gossip"]},
    ],
)
async def test_invalid_requests_are_422(
    client: httpx.AsyncClient, tenant: Tenant, body: dict[str, Any]
) -> None:
    res = await client.post(
        f"/v1/users/{user()}/recall", json={"query": "hi", **body}, headers=tenant.h()
    )
    assert res.status_code == 422
    assert res.json()["error"]["code"] == "invalid_request"


async def test_bad_user_id_is_422(client: httpx.AsyncClient, tenant: Tenant) -> None:
    res = await client.post("/v1/users/bad%20user/recall", json={"query": "x"}, headers=tenant.h())
    assert res.status_code == 422


async def test_budget_never_exceeded_and_block_is_stable(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    u = user()
    dishes = (
        "龙井虾仁",
        "东坡肉",
        "西湖醋鱼",
        "叫花鸡",
        "片儿川",
        "葱包桧",
        "知味小笼",
        "宋嫂鱼羹",
        "油焖春笋",
        "干炸响铃",
        "定胜糕",
        "猫耳朵",
    )
    for i, dish in enumerate(dishes):
        await write(
            client, tenant, u, f"用户第{i + 1}次去杭州旅行时，在西湖边吃了{dish}，觉得很好吃"
        )
    q = "我去杭州旅行时吃了什么？"
    for budget in (1, 30, 60, 120, 400, 4000):
        out = await recall(client, tenant, u, q, budget_tokens=budget, min_score=0, k=50)
        assert out["tokens"] <= budget
        assert out["tokens"] == count_tokens(out["context"])
        for f in out["facts"]:
            assert f["statement"].rstrip("。") in out["context"]
    now = {"X-Memgate-Now": datetime.now(UTC).isoformat()}
    a = await recall(client, tenant, u, q, budget_tokens=200, headers=now)
    b = await recall(client, tenant, u, q, budget_tokens=200, headers=now)
    assert a["context"].encode() == b["context"].encode() and a["context"]
    assert ids(a) == ids(b) and a["trace_id"] != b["trace_id"]


async def test_types_filter(client: httpx.AsyncClient, tenant: Tenant) -> None:
    u = user()
    ep = await write(client, tenant, u, "User visited the Louvre in Paris", type="episodic")
    sem = await write(client, tenant, u, "User loves Paris in the spring")
    out = await recall(client, tenant, u, "Paris", min_score=0, types=["episodic"])
    assert ids(out) == [ep["id"]]
    out = await recall(client, tenant, u, "Paris", min_score=0, types=["semantic"])
    assert ids(out) == [sem["id"]]


# ---------------------------------------------------------------------------- tiers


async def _set_last_interaction(
    owner_db: asyncpg.Pool, tenant: Tenant, u: str, at: datetime, hint: str | None = None
) -> None:
    async with owner_db.acquire() as conn:
        await conn.execute(
            """INSERT INTO user_state (tenant_id, user_id, last_interaction_at, last_session_hint,
                                      last_session_scope)
               VALUES ($1, $2, $3, $4, 'global') ON CONFLICT (tenant_id, user_id)
               DO UPDATE SET last_interaction_at = $3, last_session_hint = $4,
                             last_session_scope = 'global'""",
            tenant.id,
            u,
            at,
            hint,
        )


async def test_tiers_follow_the_gap(
    client: httpx.AsyncClient, tenant: Tenant, owner_db: asyncpg.Pool
) -> None:
    u = user()
    start = datetime.now(UTC)
    at = {"X-Memgate-Now": start.isoformat()}
    allergy = await write(
        client,
        tenant,
        u,
        "用户对花生过敏",
        predicate="allergy",
        value="花生",
        source=SRC_EXPLICIT,
        confidence=0.95,
        headers=at,
    )
    food = await write(
        client,
        tenant,
        u,
        "用户喜欢吃川菜",
        predicate="preferred_cuisine",
        value="川菜",
        type="profile",
        headers=at,
    )
    q = "今晚吃什么好？"

    def at_day(days: float) -> dict[str, str]:
        return {"X-Memgate-Now": (start + timedelta(days=days)).isoformat()}

    # The explicit write was the last interaction (docs/tiers.md#last-interaction).
    cont = await recall(client, tenant, u, q, headers=at_day(1))
    assert cont["tier"] == "continue"
    assert set(ids(cont)) == {allergy["id"], food["id"]}

    conf = await recall(client, tenant, u, q, headers=at_day(15))
    assert conf["tier"] == "confirm"
    assert set(ids(conf)) == {allergy["id"], food["id"]}
    assert "请确认" in conf["context"] or "确认" in conf["context"]

    new = await recall(client, tenant, u, q, headers=at_day(60), min_score=0)
    assert new["tier"] == "new"
    assert ids(new) == [allergy["id"]]  # only explicit instructions of confidence ≥ 0.9
    assert "上次曾提到" in new["context"]

    # Tier new injects those hard constraints whatever the question, even long after
    # they decayed, at the default min_score (docs/recall.md#scoring), still within k and the
    # budget.
    for later in (60, 170):
        other = await recall(client, tenant, u, "讲一个关于宇宙的冷知识", headers=at_day(later))
        assert other["tier"] == "new" and ids(other) == [allergy["id"]]
        assert "上次曾提到" in other["context"]
        assert other["tokens"] <= 400
    # ... but a request's own min_score, k and budget still apply.
    assert (await recall(client, tenant, u, q, headers=at_day(60), min_score=0.99))["facts"] == []
    assert (await recall(client, tenant, u, q, headers=at_day(60), budget_tokens=20))["facts"] == []

    # A session hint is offered while the memory is fresh, not after a long gap.
    await _set_last_interaction(owner_db, tenant, u, start, hint="在比较川菜馆")
    assert (await recall(client, tenant, u, q, headers=at_day(1)))["resume_hint"] == "在比较川菜馆"
    assert (await recall(client, tenant, u, q, headers=at_day(60)))["resume_hint"] is None


async def test_no_interaction_recorded_is_continue(
    client: httpx.AsyncClient, tenant: Tenant, owner_db: asyncpg.Pool
) -> None:
    u = user()
    await write(
        client,
        tenant,
        u,
        "User likes green tea",
        predicate="preferred_drink",
        type="profile",
        value="green tea",
    )
    async with owner_db.acquire() as conn:
        assert (
            await conn.fetchval(
                "SELECT count(*) FROM user_state WHERE tenant_id = $1 AND user_id = $2",
                tenant.id,
                u,
            )
            == 0
        )
    later = {"X-Memgate-Now": (datetime.now(UTC) + timedelta(days=400)).isoformat()}
    assert (await recall(client, tenant, u, "green tea", headers=later))["tier"] == "continue"


# ---------------------------------------------------------------------------- log and traces


async def _wait_for(predicate: Any, within: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while not await predicate():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.05)


async def test_recall_log_and_hits_written_off_the_request_path(
    client: httpx.AsyncClient, tenant: Tenant, owner_db: asyncpg.Pool
) -> None:
    u = user()
    secret_words = "what am I allergic to, zebra-quokka?"
    fact = await write(
        client,
        tenant,
        u,
        "User is allergic to shellfish",
        predicate="allergy",
        value="shellfish",
        source=SRC_EXPLICIT,
    )
    out = await recall(client, tenant, u, secret_words, trace_id="trace-log-1", session_id="s1")
    assert ids(out) == [fact["id"]]

    async def logged() -> bool:
        async with owner_db.acquire() as conn:
            n = await conn.fetchval(
                "SELECT hits FROM fact_hits WHERE fact_id = $1", uuid.UUID(fact["id"])
            )
        return bool(n == 1)

    await _wait_for(logged)
    async with owner_db.acquire() as conn:
        row = await conn.fetchrow(
            "SELECT * FROM recall_log WHERE tenant_id = $1 AND trace_id = 'trace-log-1'", tenant.id
        )
        last_hit = await conn.fetchval(
            "SELECT last_hit_at FROM fact_hits WHERE fact_id = $1", uuid.UUID(fact["id"])
        )
    assert row is not None and last_hit is not None
    got = await client.get(f"/v1/users/{u}/facts/{fact['id']}", headers=tenant.h())
    assert got.json()["hits"] == 1 and got.json()["last_hit_at"] == last_hit.isoformat()
    assert [str(i) for i in row["fact_ids"]] == [fact["id"]]
    assert row["tier"] == "continue" and row["tokens"] == out["tokens"]
    assert "zebra" not in row["detail"] and "allergic" not in row["detail"]  # no query text
    assert "structured" in row["detail"]


async def test_trace_explains_and_is_tenant_private(
    client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
) -> None:
    u = user()
    fact = await write(
        client,
        tenant,
        u,
        "User prefers SMS over email for reminders",
        predicate="contact_channel",
        type="profile",
        value="sms",
    )
    out = await recall(client, tenant, u, "how should I send the reminder?")
    assert ids(out) == [fact["id"]]
    res = await client.get(f"/v1/traces/{out['trace_id']}", headers=tenant.h())
    assert res.status_code == 200, res.text
    trace = res.json()
    assert trace["trace_id"] == out["trace_id"] and trace["user_id"] == u
    assert trace["fact_ids"] == [fact["id"]]
    assert trace["tier"] == "continue" and trace["tokens"] == out["tokens"]
    explained = trace["facts"][0]
    assert explained["statement"] == fact["statement"]
    assert explained["channels"] == out["facts"][0]["channels"]
    assert explained["score"] == out["facts"][0]["score"]
    assert {"relevance", "freshness", "trust"} <= set(explained)
    assert trace["previous"] == [] and trace["created_at"]

    other = await client.get(f"/v1/traces/{out['trace_id']}", headers=other_tenant.h())
    assert other.status_code == 404 and other.json()["error"]["code"] == "not_found"
    assert (await client.get("/v1/traces/nope", headers=tenant.h())).status_code == 404

    # After deletion the trace still names the fact, but no longer shows its text.
    await client.delete(f"/v1/users/{u}/facts/{fact['id']}", headers=tenant.h())
    trace = (await client.get(f"/v1/traces/{out['trace_id']}", headers=tenant.h())).json()
    assert trace["facts"][0]["statement"] is None and trace["facts"][0]["status"] == "deleted"


# ---------------------------------------------------------------------------- re-embed


async def test_reembed_endpoint_queues_a_job(
    client: httpx.AsyncClient, tenant: Tenant, owner_db: asyncpg.Pool
) -> None:
    res = await client.post("/v1/ops/reembed", json={}, headers=tenant.h("admin"))
    assert res.status_code == 202, res.text
    job_id = uuid.UUID(res.json()["job_id"])
    async with owner_db.acquire() as conn:
        job = await conn.fetchrow("SELECT * FROM jobs WHERE id = $1", job_id)
    assert job["kind"] == "reembed" and job["tenant_id"] == tenant.id
    assert job["state"] in ("queued", "running", "done")
    assert (
        await client.post("/v1/ops/reembed", json={}, headers=tenant.h("ops"))
    ).status_code == 403
    bad = await client.post("/v1/ops/reembed", json={"model": "nope"}, headers=tenant.h("admin"))
    assert bad.status_code == 409 and bad.json()["error"]["code"] == "conflict"
    ok = await client.post("/v1/ops/reembed", json={"model": "usem3"}, headers=tenant.h("admin"))
    assert ok.status_code == 202


async def test_reembed_keeps_recall_answering_and_switches_when_done(
    client: httpx.AsyncClient, tenant: Tenant, owner_db: asyncpg.Pool, app: Any
) -> None:
    u = user()
    allergy = await write(
        client,
        tenant,
        u,
        "User is allergic to peanuts",
        predicate="allergy",
        value="peanuts",
        source=SRC_EXPLICIT,
    )
    order = await write(client, tenant, u, "User's open return is order ABC123")
    others = [
        await write(client, tenant, u, f"User collects vintage stamp series {i}") for i in range(5)
    ]
    probe = others[0]["statement"]  # the fake provider's vectors match exact text only
    ctx = app.state.ctx
    original = ctx.embedder

    async def models() -> dict[str, int]:
        async with owner_db.acquire() as conn:
            rows = await conn.fetch(
                """SELECT embedding_model, count(*) AS n FROM facts
                   WHERE tenant_id = $1 AND status <> 'deleted' GROUP BY 1""",
                tenant.id,
            )
        return {r["embedding_model"]: r["n"] for r in rows}

    assert await models() == {original.model: 7}
    with OpenAIFake(dim=48) as fake:
        new = OpenAIEmbedder(base_url=fake.base_url, model="fake-embed", dim=48)
        ctx.embedder = new  # the operator switched the configured embedder
        try:
            # Half-migrated: nothing on the new model yet, recall still answers.
            out = await recall(client, tenant, u, "what am I allergic to?")
            assert ids(out) == [allergy["id"]]
            out = await recall(client, tenant, u, "ABC123", min_score=0)
            assert ids(out)[:1] == [order["id"]]
            assert "keyword" in out["facts"][0]["channels"]
            probe_out = await recall(client, tenant, u, probe, min_score=0, k=50)
            assert all("dense" not in f["channels"] for f in probe_out["facts"])

            res = await client.post("/v1/ops/reembed", json={}, headers=tenant.h("admin"))
            job_id = uuid.UUID(res.json()["job_id"])
            part = await reembed_worker.reembed_tenant(
                ctx, tenant.id, new, batch_size=3, max_batches=1
            )
            assert part["done"] == 3 and part["total"] == 7 and not part["complete"]
            assert await models() == {original.model: 4, new.model: 3}
            out = await recall(client, tenant, u, "what am I allergic to?")
            assert ids(out) == [allergy["id"]]
            out = await recall(client, tenant, u, "ABC123", min_score=0)
            assert ids(out)[:1] == [order["id"]]
            assert "keyword" in out["facts"][0]["channels"]

            # The job, through the job framework, finishes the rest.
            assert await run_job(worker_ctx(ctx), str(job_id), str(tenant.id)) == "done"
            assert await models() == {new.model: 7}
            async with owner_db.acquire() as conn:
                job = await conn.fetchrow("SELECT state, result FROM jobs WHERE id = $1", job_id)
                dims = await conn.fetchval(
                    "SELECT array_agg(DISTINCT vector_dims(embedding)) FROM facts"
                    " WHERE tenant_id = $1",
                    tenant.id,
                )
            assert job["state"] == "done" and dims == [48]
            result = json.loads(job["result"])  # the owner pool has no jsonb codec
            assert result["done"] == 4 and result["complete"] is True

            # Done: dense compares on the new model.
            probe_out = await recall(client, tenant, u, probe, min_score=0)
            assert ids(probe_out)[:1] == [others[0]["id"]]
            assert "dense" in probe_out["facts"][0]["channels"]
            # Idempotent: another run has nothing to do.
            again = await reembed_worker.reembed_tenant(ctx, tenant.id, new)
            assert again["total"] == 0 and again["done"] == 0 and again["complete"]
            # A job for another model than this worker's fails at once, changing nothing.
            async with tenant_tx(ctx.pool, tenant.id) as conn:
                other = await jobs_store.insert(
                    conn, tenant.id, "reembed", {"model": "x"}, datetime.now(UTC)
                )
            assert await run_job(worker_ctx(ctx), str(other), str(tenant.id)) == "failed"
        finally:
            ctx.embedder = original
            await new.aclose()


async def test_reembed_too_large_for_one_slice_continues_in_a_new_job(
    client: httpx.AsyncClient,
    tenant: Tenant,
    owner_db: asyncpg.Pool,
    app: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    u = user()
    for topic in ("chess openings", "sourdough baking", "trail running", "film photography"):
        await write(client, tenant, u, f"User's weekend hobby is {topic}")
    ctx = app.state.ctx
    original = ctx.embedder
    monkeypatch.setattr(reembed_worker, "BATCH_SIZE", 3)
    monkeypatch.setattr(reembed_worker, "SLICE_SHARE", 0.0)  # one batch per job
    with OpenAIFake(dim=16) as fake:
        new = OpenAIEmbedder(base_url=fake.base_url, model="fake-small", dim=16)
        ctx.embedder = new
        try:
            res = await client.post("/v1/ops/reembed", json={}, headers=tenant.h("admin"))
            job_id = res.json()["job_id"]
            chain = [job_id]
            for _ in range(5):
                assert await run_job(worker_ctx(ctx), job_id, str(tenant.id)) == "done"
                async with owner_db.acquire() as conn:
                    raw = await conn.fetchval(
                        "SELECT result FROM jobs WHERE id = $1", uuid.UUID(job_id)
                    )
                result = json.loads(raw)
                if result["complete"]:
                    break
                job_id = result["next_job_id"]
                chain.append(job_id)
            assert result["complete"] and len(chain) >= 2
            async with owner_db.acquire() as conn:
                left = await conn.fetchval(
                    "SELECT count(*) FROM facts WHERE tenant_id = $1"
                    " AND embedding_model IS DISTINCT FROM $2",
                    tenant.id,
                    new.model,
                )
            assert left == 0
        finally:
            ctx.embedder = original
            await new.aclose()


async def test_a_vector_of_another_dimension_only_disables_dense(
    client: httpx.AsyncClient, tenant: Tenant, owner_db: asyncpg.Pool
) -> None:
    u = user()
    fact = await write(
        client,
        tenant,
        u,
        "User is allergic to penicillin",
        predicate="allergy",
        value="penicillin",
        source=SRC_EXPLICIT,
    )
    async with owner_db.acquire() as conn:  # a provider changed dimension under one name
        await conn.execute(
            "UPDATE facts SET embedding = '[1,0,0]'::vector WHERE id = $1", uuid.UUID(fact["id"])
        )
    out = await recall(client, tenant, u, "what am I allergic to?")
    assert ids(out) == [fact["id"]]
    assert out["facts"][0]["channels"][0] == "structured"
    assert "dense" not in out["facts"][0]["channels"]


# ---------------------------------------------------------------------------- one round trip


def _pool_query(tenant_id: uuid.UUID, user_id: str) -> recall_store.RecallQuery:
    return recall_store.RecallQuery(
        tenant_id=tenant_id,
        user_id=user_id,
        scopes=["global"],
        now=datetime.now(UTC),
        sensitivities=["normal", "personal"],
        types=None,
        predicates=[],
        terms=["vault"],
        vector=None,
        embedding_model=None,
    )


async def test_recall_function_pins_the_tenant_for_its_statement_only(
    client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant, app: Any
) -> None:
    u = user()
    mine = await write(client, tenant, u, "The team wiki lives under ops/one")
    await write(client, other_tenant, u, "The team wiki lives under ops/two")
    async with app.state.ctx.pool.acquire() as conn:  # the API's pool, role memgate_app
        found = await recall_store.fetch_pool(conn, _pool_query(tenant.id, u))
        assert [str(r.id) for r in found.rows] == [mine["id"]]
        assert found.pool_size == 1
        # no transaction was left open and no tenant outlives the call: RLS shows nothing
        assert not conn.is_in_transaction()
        assert not await conn.fetchval("SELECT current_setting('app.tenant_id', true)")
        assert await conn.fetchval("SELECT count(*) FROM facts") == 0


async def test_recall_function_pins_the_tenant_wherever_it_executes(
    client: httpx.AsyncClient, tenant: Tenant, app: Any
) -> None:
    """On Citus the call runs on the tenant's worker only when Citus delegates it; inside
    an explicit transaction block it never does, and a cached plan may stop doing it. The
    function then runs on the coordinator and its statement reaches the shards over Citus's
    own connections: the tenant must travel with it (SET LOCAL, which Citus propagates),
    or RLS on the workers answers nothing. On one node this is the plain path."""
    u = user()
    mine = await write(client, tenant, u, "The team wiki lives under ops/one")
    async with app.state.ctx.pool.acquire() as conn:
        async with conn.transaction():  # no tenant pinned by the caller
            await conn.fetchval("SELECT 1")
            found = await recall_store.fetch_pool(conn, _pool_query(tenant.id, u))
        assert [str(r.id) for r in found.rows] == [mine["id"]]
        for _ in range(12):  # past PostgreSQL's five custom plans of a prepared statement
            found = await recall_store.fetch_pool(conn, _pool_query(tenant.id, u))
            assert [str(r.id) for r in found.rows] == [mine["id"]]
        assert not await conn.fetchval("SELECT current_setting('app.tenant_id', true)")


async def test_recall_without_the_function_falls_back_and_migrate_reinstalls_it(
    client: httpx.AsyncClient, tenant: Tenant, owner_db: asyncpg.Pool, migrated: Any
) -> None:
    u = user()
    fact = await write(
        client,
        tenant,
        u,
        "User is allergic to kiwi",
        predicate="allergy",
        value="kiwi",
        source=SRC_EXPLICIT,
    )
    signature = f"{recall_store.RECALL_FUNCTION}({recall_store.RECALL_ARGS})"
    async with owner_db.acquire() as conn:  # a database migrated by an older release
        await conn.execute(f"DROP FUNCTION {signature}")
    try:
        out = await recall(client, tenant, u, "what am I allergic to?")
        assert ids(out) == [fact["id"]]
    finally:
        await migrate(migrated.database_url)
    async with owner_db.acquire() as conn:
        assert await conn.fetchval("SELECT to_regprocedure($1) IS NOT NULL", signature)
    assert ids(await recall(client, tenant, u, "what am I allergic to?")) == [fact["id"]]


async def test_prune_routines_drops_only_earlier_releases_functions(
    client: httpx.AsyncClient, tenant: Tenant, owner_db: asyncpg.Pool
) -> None:
    current = f"{recall_store.RECALL_FUNCTION}({recall_store.RECALL_ARGS})"
    async with owner_db.acquire() as conn:  # what two earlier releases left behind
        body = "RETURNS int LANGUAGE sql AS 'SELECT 1'"
        for name in (
            "memgate_recall_0123456789ab",
            "memgate_recall_ba9876543210",
            "memgate_fence_0123456789ab",  # the write path's functions are hashed alike
        ):
            await conn.execute(f"CREATE FUNCTION {name}(uuid) {body}")
        await conn.execute(f"CREATE FUNCTION memgate_recallish(uuid) {body}")
        try:
            proc = await asyncio.create_subprocess_exec(  # the operator's command
                sys.executable,
                "-m",
                "app.cli",
                "prune-routines",
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            out, err = await proc.communicate()
            assert proc.returncode == 0, err.decode()
            assert out.decode().split() == [
                "memgate_fence_0123456789ab(uuid)",
                "memgate_recall_0123456789ab(uuid)",
                "memgate_recall_ba9876543210(uuid)",
            ]
            assert await prune_routines(conn) == []  # idempotent
            assert await conn.fetchval("SELECT to_regprocedure($1) IS NOT NULL", current)
            # a name that only looks alike is not ours to drop
            assert await conn.fetchval(
                "SELECT to_regprocedure('memgate_recallish(uuid)') IS NOT NULL"
            )
        finally:
            await conn.execute("DROP FUNCTION IF EXISTS memgate_recallish(uuid)")
    u = user()
    fact = await write(
        client,
        tenant,
        u,
        "User is allergic to kiwi",
        predicate="allergy",
        value="kiwi",
        source=SRC_EXPLICIT,
    )
    assert ids(await recall(client, tenant, u, "what am I allergic to?")) == [fact["id"]]
