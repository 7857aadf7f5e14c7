"""Observations end to end: API → outbox → relay/arq → worker → extractor → gate
(docs/extraction.md#extractors).

A real arq `Worker` runs in-process against the real Redis, with the API's own
AppContext (same pool), plus the outbox relay. Sweeps are called directly with a
shifted `now`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

import asyncpg
import httpx
import orjson
import pytest
from arq.worker import Worker

from app import clock
from app.context import AppContext
from app.queue import QUEUE_NAME, redis_settings
from tests.conftest import Tenant
from workers import maintenance
from workers.jobs import ARQ_EXTRA_TRIES, run_job
from workers.relay import Relay
from workers.settings import HANDLERS

# ---------------------------------------------------------------------------------------
# Harness (also used by test_jobs_faults.py)


@asynccontextmanager
async def running_worker(
    app_ctx: AppContext, *, relay: bool = True, job_timeout: int = 30
) -> AsyncIterator[Worker]:
    """An arq worker (and the outbox relay) in this event loop, until the block ends."""
    worker = Worker(
        functions=[run_job],  # type: ignore[list-item]
        redis_settings=redis_settings(app_ctx.settings.redis_url or ""),
        queue_name=QUEUE_NAME,
        ctx={"app": app_ctx, "handlers": HANDLERS},
        handle_signals=False,
        poll_delay=0.05,
        max_tries=app_ctx.settings.job_max_tries + ARQ_EXTRA_TRIES,
        job_timeout=job_timeout,
        keep_result=60,
    )
    task = asyncio.create_task(worker.async_run())
    relay_ = Relay(app_ctx, interval_s=0.2)
    if relay:
        relay_.start()
    try:
        yield worker
    finally:
        await relay_.stop()
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
        with contextlib.suppress(BaseException):
            await worker.close()


async def observe(
    client: httpx.AsyncClient,
    tenant: Tenant,
    user: str,
    messages: list[dict[str, Any]],
    **extra: Any,
) -> str:
    res = await client.post(
        f"/v1/users/{user}/observations", json={"messages": messages, **extra}, headers=tenant.h()
    )
    assert res.status_code == 202, res.text
    return str(res.json()["job_id"])


async def wait_job(
    client: httpx.AsyncClient, tenant: Tenant, job_id: str, within: float = 20.0
) -> dict[str, Any]:
    deadline = time.monotonic() + within
    while True:
        res = await client.get(f"/v1/jobs/{job_id}", headers=tenant.h())
        assert res.status_code == 200, res.text
        body: dict[str, Any] = res.json()
        if body["state"] in ("done", "failed"):
            return body
        if time.monotonic() > deadline:
            raise AssertionError(f"job {job_id} still {body['state']}: {body}")
        await asyncio.sleep(0.05)


async def facts_of(client: httpx.AsyncClient, tenant: Tenant, user: str) -> list[dict[str, Any]]:
    res = await client.get(f"/v1/users/{user}/facts?status=active", headers=tenant.h())
    assert res.status_code == 200, res.text
    items: list[dict[str, Any]] = res.json()["items"]
    return items


async def candidates_of(
    client: httpx.AsyncClient, tenant: Tenant, user: str, status: str | None = None
) -> list[dict[str, Any]]:
    q = f"?status={status}" if status else ""
    res = await client.get(f"/v1/users/{user}/candidates{q}", headers=tenant.h())
    assert res.status_code == 200, res.text
    items: list[dict[str, Any]] = res.json()["items"]
    return items


def u(role: str, content: str, turn_id: str | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": role, "content": content}
    if turn_id:
        msg["turn_id"] = turn_id
    return msg


@pytest.fixture
async def worker(app: Any) -> AsyncIterator[Worker]:
    async with running_worker(app.state.ctx) as w:
        yield w


@pytest.fixture
def ctx(app: Any) -> AppContext:
    c: AppContext = app.state.ctx
    return c


# ---------------------------------------------------------------------------------------
# Extraction through the gate


async def test_chinese_conversation(
    client: httpx.AsyncClient, tenant: Tenant, worker: Worker
) -> None:
    job = await observe(
        client,
        tenant,
        "zh1",
        [
            u("user", "你好", "z0"),
            u("user", "记住我用表格输出", "z1"),
            u("assistant", "好的，以后我都用表格。你喜欢川菜吗？我建议你用 Rust。", "z2"),
            u("user", "我们团队用 Go 1.22", "z3"),
            u("user", "如果我搬到上海，会怎么样？", "z4"),
            u("user", "以后别发短信", "z5"),
        ],
        trace_id="tr-zh",
    )
    body = await wait_job(client, tenant, job)
    assert body["state"] == "done" and body["attempts"] == 1
    by_turn = {d["turn_id"]: d for d in body["decisions"]}
    assert set(by_turn) == {"z1", "z3", "z5"}  # assistant turn and hypothetical: nothing
    assert by_turn["z1"]["decision"] == "written" and by_turn["z5"]["decision"] == "written"
    assert by_turn["z3"]["decision"] == "pending" and "candidate_id" in by_turn["z3"]

    facts = {(f["predicate"], str(f["value"])) for f in await facts_of(client, tenant, "zh1")}
    assert facts == {
        ("preferred_output_format", "table"),
        ("communication_constraint", "不要发短信"),
    }
    [fact] = [
        f
        for f in await facts_of(client, tenant, "zh1")
        if f["predicate"] == "preferred_output_format"
    ]
    assert (
        fact["source"]["kind"] == "explicit_instruction" and fact["source"]["trace_id"] == "tr-zh"
    )
    assert fact["source"]["turn_id"] == "z1"
    cands = await candidates_of(client, tenant, "zh1")
    assert [(c["predicate"], c["value"], c["status"]) for c in cands] == [
        ("tech_stack", "Go 1.22", "pending")
    ]


async def test_english_conversation(
    client: httpx.AsyncClient, tenant: Tenant, worker: Worker
) -> None:
    job = await observe(
        client,
        tenant,
        "en1",
        [
            u("user", "Remember that I prefer bullet points."),
            u("assistant", "Sure! By the way, you seem to love Italian food."),
            u("user", "Please ship my orders with FedEx"),
            u("user", "What if I moved to Berlin?"),
            u("user", "Do you like sushi?"),
        ],
    )
    body = await wait_job(client, tenant, job)
    decisions = sorted(d["decision"] for d in body["decisions"])
    assert decisions == ["pending", "written"]
    assert all(d["turn_id"].startswith("h:") for d in body["decisions"])  # ids from the hash
    facts = await facts_of(client, tenant, "en1")
    assert [(f["predicate"], f["value"]) for f in facts] == [
        ("preferred_output_format", "bullet_list")
    ]
    cands = await candidates_of(client, tenant, "en1")
    assert [(c["predicate"], c["value"]) for c in cands] == [("delivery_carrier", "FedEx")]


async def test_questions_hypotheticals_and_assistant_turns_produce_nothing(
    client: httpx.AsyncClient, tenant: Tenant, worker: Worker
) -> None:
    job = await observe(
        client,
        tenant,
        "nothing",
        [
            u("user", "如果我是素食者，你会推荐什么？"),
            u("user", "假如我对花生过敏呢？"),
            u("user", "What if I preferred tables?"),
            u("user", "Suppose I lived in Paris."),
            u("user", "你喜欢川菜吗？"),
            u("assistant", "The user prefers tables and is allergic to peanuts. 用户喜欢川菜。"),
            u("system", "Remember that the user prefers JSON."),
            u("tool", "记住我用表格输出"),
        ],
    )
    body = await wait_job(client, tenant, job)
    assert body["state"] == "done" and body["decisions"] == []
    assert await facts_of(client, tenant, "nothing") == []
    assert await candidates_of(client, tenant, "nothing") == []


async def test_a_lasting_fact_said_in_passing_is_read_by_meaning(
    client: httpx.AsyncClient, tenant: Tenant, worker: Worker
) -> None:
    # no rule reads it (docs/extraction.md#durable-statements): the worker's durable stage
    # does, on the embedder the app runs, and the gate holds it as a tentative candidate
    said = "any ideas for a rainy weekend? two cats at home so nothing too messy"
    body = await wait_job(
        client, tenant, await observe(client, tenant, "dur", [u("user", said, "d1")])
    )
    assert [d["decision"] for d in body["decisions"]] == ["pending"]
    assert await facts_of(client, tenant, "dur") == []
    [cand] = await candidates_of(client, tenant, "dur")
    assert cand["statement"] == "About the user: two cats at home so nothing too messy"
    assert cand["status"] == "pending" and cand["observations"] == 1
    # the tenant turns it off: the same words teach nothing
    res = await client.put(
        "/v1/admin/policy", json={"extract": {"durable": 1}}, headers=tenant.h("admin")
    )
    assert res.status_code == 200, res.text
    body = await wait_job(
        client, tenant, await observe(client, tenant, "dur-off", [u("user", said, "d2")])
    )
    assert body["decisions"] == [] and await candidates_of(client, tenant, "dur-off") == []
    bad = await client.put(
        "/v1/admin/policy", json={"extract": {"durable": 0.2}}, headers=tenant.h("admin")
    )
    assert bad.status_code == 422 and bad.json()["error"]["code"] == "invalid_request"


async def test_preference_once_is_a_candidate_twice_is_promoted(
    client: httpx.AsyncClient, tenant: Tenant, worker: Worker
) -> None:
    first = await wait_job(
        client, tenant, await observe(client, tenant, "p1", [u("user", "我最喜欢吃川菜", "a1")])
    )
    assert [d["decision"] for d in first["decisions"]] == ["pending"]
    assert await facts_of(client, tenant, "p1") == []
    # the same turn posted again (a client retry) is not a second observation
    again = await wait_job(
        client, tenant, await observe(client, tenant, "p1", [u("user", "我最喜欢吃川菜", "a1")])
    )
    assert [d["decision"] for d in again["decisions"]] == ["pending"]
    [cand] = await candidates_of(client, tenant, "p1")
    assert cand["observations"] == 1 and cand["status"] == "pending"
    # said again in another turn: promoted through the gate (min_observations 2)
    second = await wait_job(
        client, tenant, await observe(client, tenant, "p1", [u("user", "我最喜欢吃川菜！", "a2")])
    )
    assert [d["decision"] for d in second["decisions"]] == ["written"]
    [fact] = await facts_of(client, tenant, "p1")
    assert (fact["predicate"], fact["value"]) == ("preferred_cuisine", "川菜")
    assert second["decisions"][0]["fact_id"] == fact["id"]
    [cand] = await candidates_of(client, tenant, "p1")
    assert cand["status"] == "promoted" and cand["fact_id"] == fact["id"]


async def test_confirm_and_reject(
    client: httpx.AsyncClient, tenant: Tenant, worker: Worker
) -> None:
    await wait_job(
        client,
        tenant,
        await observe(
            client,
            tenant,
            "c1",
            [
                u("user", "I love Italian food", "t1"),
                u("user", "I use Python 3.12 at work", "t2"),
            ],
        ),
    )
    cands = {c["predicate"]: c for c in await candidates_of(client, tenant, "c1", "pending")}
    assert set(cands) == {"preferred_cuisine", "tech_stack"}

    res = await client.post(
        f"/v1/users/c1/candidates/{cands['preferred_cuisine']['id']}/confirm", headers=tenant.h()
    )
    assert res.status_code == 201, res.text
    body = res.json()
    assert body["decision"] == "written" and body["candidate"]["status"] == "promoted"
    assert body["fact"]["source"]["kind"] == "explicit_instruction"
    again = await client.post(
        f"/v1/users/c1/candidates/{cands['preferred_cuisine']['id']}/confirm", headers=tenant.h()
    )
    assert again.status_code == 409

    res = await client.post(
        f"/v1/users/c1/candidates/{cands['tech_stack']['id']}/reject", headers=tenant.h()
    )
    assert res.json() == {"id": cands["tech_stack"]["id"], "status": "rejected"}
    # rejected content is tombstoned: saying it again is refused
    body = await wait_job(
        client,
        tenant,
        await observe(client, tenant, "c1", [u("user", "I use Python 3.12 at work", "t3")]),
    )
    assert body["decisions"] == [
        {
            "turn_id": "t3",
            "decision": "rejected",
            "reason": "tombstoned",
            "detail": {"semantic": "on"},
        }
    ]
    assert [f["predicate"] for f in await facts_of(client, tenant, "c1")] == ["preferred_cuisine"]
    # unknown / other user's candidate: 404
    assert (
        await client.post(
            f"/v1/users/c2/candidates/{cands['tech_stack']['id']}/reject", headers=tenant.h()
        )
    ).status_code == 404


async def test_candidate_expires(
    client: httpx.AsyncClient, tenant: Tenant, worker: Worker, ctx: AppContext
) -> None:
    await wait_job(
        client,
        tenant,
        await observe(client, tenant, "x1", [u("user", "Please ship my orders with FedEx", "e1")]),
    )
    assert len(await candidates_of(client, tenant, "x1", "pending")) == 1
    assert await maintenance.sweep_candidate_expiry(ctx, clock.now() + timedelta(days=29)) == 0
    assert await maintenance.sweep_candidate_expiry(ctx, clock.now() + timedelta(days=31)) >= 1
    assert await candidates_of(client, tenant, "x1", "pending") == []
    [cand] = await candidates_of(client, tenant, "x1", "expired")
    assert cand["predicate"] == "delivery_carrier"
    # an expired candidate starts over: said again it is a fresh pending candidate
    await wait_job(
        client,
        tenant,
        await observe(client, tenant, "x1", [u("user", "Please ship my orders with FedEx", "e2")]),
    )
    assert len(await candidates_of(client, tenant, "x1", "pending")) == 1
    assert await facts_of(client, tenant, "x1") == []


async def test_deleted_fact_said_again_is_tombstoned(
    client: httpx.AsyncClient, tenant: Tenant, worker: Worker
) -> None:
    body = await wait_job(
        client, tenant, await observe(client, tenant, "d1", [u("user", "以后别发短信", "d1")])
    )
    fact_id = body["decisions"][0]["fact_id"]
    res = await client.delete(f"/v1/users/d1/facts/{fact_id}", headers=tenant.h())
    assert res.status_code == 200
    # said as a plain statement (not an explicit re-statement): refused
    body = await wait_job(
        client,
        tenant,
        await observe(
            client, tenant, "d1", [u("user", "不要发短信", "d2"), u("user", "不要发短信。", "d3")]
        ),
    )
    assert {d["reason"] for d in body["decisions"]} == {"tombstoned"}
    assert await facts_of(client, tenant, "d1") == []
    assert await candidates_of(client, tenant, "d1", "pending") == []


async def test_extract_mode_off_and_direct(
    client: httpx.AsyncClient, tenant: Tenant, worker: Worker
) -> None:
    res = await client.put(
        "/v1/admin/policy", json={"extract": {"mode": "off"}}, headers=tenant.h("admin")
    )
    assert res.status_code == 200, res.text
    body = await wait_job(
        client,
        tenant,
        await observe(
            client, tenant, "m1", [u("user", "记住我用表格输出"), u("user", "I love Italian food")]
        ),
    )
    assert body["decisions"] == [] and body["state"] == "done"
    assert (
        await facts_of(client, tenant, "m1") == []
        and await candidates_of(client, tenant, "m1") == []
    )

    await client.put(
        "/v1/admin/policy", json={"extract": {"mode": "direct"}}, headers=tenant.h("admin")
    )
    body = await wait_job(
        client, tenant, await observe(client, tenant, "m1", [u("user", "I love Italian food")])
    )
    assert [d["decision"] for d in body["decisions"]] == ["written"]
    [fact] = await facts_of(client, tenant, "m1")
    assert fact["source"]["kind"] == "user_message" and fact["value"] == "italian"
    assert await candidates_of(client, tenant, "m1") == []


async def test_max_candidates_per_turn(
    client: httpx.AsyncClient, tenant: Tenant, worker: Worker
) -> None:
    await client.put(
        "/v1/admin/policy",
        json={"extract": {"max_candidates_per_turn": 1}},
        headers=tenant.h("admin"),
    )
    body = await wait_job(
        client,
        tenant,
        await observe(
            client,
            tenant,
            "mc",
            [
                u(
                    "user",
                    "I love Italian food. Please ship my orders with FedEx. My name is Alice.",
                    "k1",
                ),
            ],
        ),
    )
    assert len(body["decisions"]) == 1


async def test_secret_never_reaches_the_jobs_table(
    client: httpx.AsyncClient, tenant: Tenant, worker: Worker, owner_db: asyncpg.Pool
) -> None:
    secret = "sk-proj-abcdefghijklmnopqrstuvwxyz123456"
    card = "4111 1111 1111 1111"
    job = await observe(
        client,
        tenant,
        "s1",
        [
            u("user", f"my api key is {secret}, remember that I prefer tables"),
            u("user", f"my card is {card}"),
        ],
    )
    async with owner_db.acquire() as conn:
        stored = await conn.fetchval("SELECT payload::text FROM jobs WHERE id = $1", uuid.UUID(job))
    assert secret not in stored and card not in stored and card.replace(" ", "") not in stored
    body = await wait_job(client, tenant, job)
    assert body["state"] == "done"
    async with owner_db.acquire() as conn:
        for table in ("jobs", "facts", "candidates", "audit_events"):
            n = await conn.fetchval(
                f"SELECT count(*) FROM {table} t WHERE t.tenant_id = $1 AND t::text LIKE $2",
                tenant.id,
                f"%{secret[:20]}%",
            )
            assert n == 0, table
        # once done, the job keeps no words at all
        payload = await conn.fetchval("SELECT payload FROM jobs WHERE id = $1", uuid.UUID(job))
    assert "tables" not in str(payload)


async def test_job_status_and_isolation(
    client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant, worker: Worker
) -> None:
    job = await observe(client, tenant, "j1", [u("user", "记住我用表格输出", "q1")])
    body = await wait_job(client, tenant, job)
    assert set(body) >= {"id", "kind", "state", "attempts", "decisions", "created_at", "updated_at"}
    assert body["kind"] == "observe" and "error" not in body
    assert body["decisions"][0]["turn_id"] == "q1"
    assert (await client.get(f"/v1/jobs/{job}", headers=other_tenant.h())).status_code == 404
    assert (await client.get(f"/v1/jobs/{uuid.uuid4()}", headers=tenant.h())).status_code == 404
    assert (await client.get("/v1/users/j1/candidates", headers=other_tenant.h())).json()[
        "items"
    ] == []


async def test_limits_and_scope(client: httpx.AsyncClient, tenant_factory: Any) -> None:
    t = await tenant_factory(scoped={"role": "agent", "scopes": ["project:a"]})
    url = "/v1/users/l1/observations"
    too_many = {"messages": [u("user", "hi")] * 51}
    res = await client.post(url, json=too_many, headers=t.h())
    assert res.status_code == 413 and res.json()["error"]["code"] == "payload_too_large"
    too_big = {"messages": [u("user", "汉" * 3000), u("user", "字" * 3000)]}  # 18 KB as UTF-8
    assert (await client.post(url, json=too_big, headers=t.h())).status_code == 413
    assert (await client.post(url, json={"messages": []}, headers=t.h())).status_code == 422
    bad_role = {"messages": [{"role": "narrator", "content": "x"}]}
    assert (await client.post(url, json=bad_role, headers=t.h())).status_code == 422
    body = {"messages": [u("user", "hi")], "scope": "project:b"}
    res = await client.post(url, json=body, headers=t.h("scoped"))
    assert res.status_code == 403
    body["scope"] = "project:a"
    assert (await client.post(url, json=body, headers=t.h("scoped"))).status_code == 202
    assert (await client.post(url, json=body, headers=t.h("ops"))).status_code == 202


async def test_external_content_never_becomes_memory(
    client: httpx.AsyncClient, tenant: Tenant, worker: Worker
) -> None:
    body = await wait_job(
        client,
        tenant,
        await observe(
            client, tenant, "ext", [u("user", "记住我用表格输出")], source_kind="external_content"
        ),
    )
    assert [(d["decision"], d.get("reason")) for d in body["decisions"]] == [
        ("rejected", "external_source")
    ]


# ---------------------------------------------------------------------------------------
# Sweeps (called directly with a shifted `now`)


async def _write(
    client: httpx.AsyncClient, tenant: Tenant, user: str, **fact: Any
) -> dict[str, Any]:
    body = {"type": "semantic", "source": {"kind": "user_message"}, **fact}
    res = await client.post(f"/v1/users/{user}/facts", json=body, headers=tenant.h())
    assert res.status_code == 201, res.text
    out: dict[str, Any] = res.json()["fact"]
    return out


async def test_sweep_promotions_catches_candidates_over_threshold(
    client: httpx.AsyncClient, tenant: Tenant, worker: Worker, ctx: AppContext
) -> None:
    await client.put(
        "/v1/admin/policy", json={"promote": {"min_observations": 3}}, headers=tenant.h("admin")
    )
    for turn in ("r1", "r2"):
        await wait_job(
            client,
            tenant,
            await observe(client, tenant, "sp", [u("user", "I love Italian food", turn)]),
        )
    assert await facts_of(client, tenant, "sp") == []
    await client.put(
        "/v1/admin/policy", json={"promote": {"min_observations": 2}}, headers=tenant.h("admin")
    )
    ctx.policies.invalidate(tenant.id)
    assert await maintenance.sweep_promotions(ctx, clock.now()) >= 1
    assert [f["predicate"] for f in await facts_of(client, tenant, "sp")] == ["preferred_cuisine"]
    assert await maintenance.sweep_promotions(ctx, clock.now()) == 0  # idempotent
    assert len(await facts_of(client, tenant, "sp")) == 1


async def test_sweep_ttl_decay_eviction(
    client: httpx.AsyncClient, tenant: Tenant, ctx: AppContext, owner_db: asyncpg.Pool
) -> None:
    await client.put(
        "/v1/admin/policy",
        json={"retention": {"max_items_per_subject": 3}},
        headers=tenant.h("admin"),
    )
    short = await _write(
        client, tenant, "sw", statement="The user is in Berlin this week", ttl_days=2
    )
    explicit = await _write(
        client,
        tenant,
        "sw",
        statement="The user never wants calls",
        source={"kind": "explicit_instruction"},
        confidence=0.5,
    )
    weak = [
        await _write(client, tenant, "sw", statement=s, confidence=c)
        for s, c in [
            ("The user collects stamps", 0.3),
            ("The user likes jazz", 0.9),
            ("The user drives a Volvo", 0.4),
        ]
    ]
    now = clock.now()
    # sweeps cover every tenant, so other tests' facts may count too: assert on ours
    await maintenance.sweep_fact_ttl(ctx, now + timedelta(days=1))
    assert short["id"] in {f["id"] for f in await facts_of(client, tenant, "sw")}
    assert await maintenance.sweep_fact_ttl(ctx, now + timedelta(days=3)) >= 1
    active = {f["id"] for f in await facts_of(client, tenant, "sw")}
    assert short["id"] not in active and len(active) == 4
    async with owner_db.acquire() as conn:
        row = await conn.fetchrow(
            "SELECT status, archived_reason FROM facts WHERE id = $1", uuid.UUID(short["id"])
        )
        assert tuple(row) == ("archived", "expired")
        assert (
            await conn.fetchval("SELECT count(*) FROM tombstones WHERE tenant_id = $1", tenant.id)
            == 0
        )

    # decay: 90-day half-life, floor 0.3; only weights move
    assert await maintenance.sweep_decay(ctx, now + timedelta(days=90)) >= 4
    async with owner_db.acquire() as conn:
        weights = {
            r["statement"]: r["weight"]
            for r in await conn.fetch(
                "SELECT statement, weight FROM facts WHERE tenant_id = $1 AND status = 'active'",
                tenant.id,
            )
        }
    assert all(abs(w - 0.5) < 0.01 for w in weights.values()) and len(weights) == 4
    await maintenance.sweep_decay(ctx, now + timedelta(days=3650))
    async with owner_db.acquire() as conn:
        floor = await conn.fetchval(
            "SELECT min(weight) FROM facts WHERE tenant_id = $1 AND status = 'active'", tenant.id
        )
    assert abs(floor - 0.3) < 1e-6
    await maintenance.sweep_decay(ctx, now + timedelta(days=3650))  # idempotent
    async with owner_db.acquire() as conn:
        again = await conn.fetchval(
            "SELECT min(weight) FROM facts WHERE tenant_id = $1 AND status = 'active'", tenant.id
        )
    assert again == floor

    # capacity 3: the least useful goes first, the explicit instruction (lowest score) last
    # (the sweep covers every tenant: its total may count other tests' users too)

    async def evicted() -> int:
        async with owner_db.acquire() as conn:
            return int(
                await conn.fetchval(
                    """SELECT count(*) FROM facts
                       WHERE tenant_id = $1 AND archived_reason = 'evicted'""",
                    tenant.id,
                )
            )

    assert await maintenance.sweep_eviction(ctx, now) >= 1
    assert await evicted() == 1
    active = {f["statement"] for f in await facts_of(client, tenant, "sw")}
    assert active == {explicit["statement"], weak[1]["statement"], weak[2]["statement"]}
    await maintenance.sweep_eviction(ctx, now)  # nothing more of ours goes
    assert await evicted() == 1
    assert {f["statement"] for f in await facts_of(client, tenant, "sw")} == active


async def test_sweep_purge_erases_copies(
    client: httpx.AsyncClient, tenant: Tenant, ctx: AppContext, owner_db: asyncpg.Pool
) -> None:
    gone = await _write(client, tenant, "pg", statement="The user's locker code is in drawer nine")
    kept = await _write(client, tenant, "pg", statement="The user likes green tea")
    async with owner_db.acquire() as conn:
        await conn.execute(
            """INSERT INTO recall_log (tenant_id, trace_id, user_id, fact_ids, detail)
               VALUES ($1, 'tr1', 'pg', $2, $3::jsonb), ($1, 'tr2', 'pg', $4, '{}'::jsonb)""",
            tenant.id,
            [uuid.UUID(gone["id"]), uuid.UUID(kept["id"])],
            orjson.dumps(
                {"facts": [{"id": gone["id"], "statement": "drawer nine"}, {"id": kept["id"]}]}
            ).decode(),
            [uuid.UUID(gone["id"])],
        )
    res = await client.delete(f"/v1/users/pg/facts/{gone['id']}", headers=tenant.h())
    assert res.status_code == 200
    assert await maintenance.sweep_purge(ctx, clock.now()) >= 1
    async with owner_db.acquire() as conn:
        logs = await conn.fetch(
            "SELECT trace_id, fact_ids, detail::text AS d FROM recall_log WHERE tenant_id = $1",
            tenant.id,
        )
        audit = await conn.fetchval(
            "SELECT string_agg(detail::text, ' ') FROM audit_events WHERE tenant_id = $1", tenant.id
        )
        purged = await conn.fetchrow(
            "SELECT statement, embedding, scrubbed_at FROM facts WHERE id = $1",
            uuid.UUID(gone["id"]),
        )
    assert [(r["trace_id"], r["fact_ids"]) for r in logs] == [("tr1", [uuid.UUID(kept["id"])])]
    assert "drawer nine" not in logs[0]["d"]
    assert "drawer nine" not in (audit or "")
    assert purged["statement"] == "" and purged["embedding"] is None and purged["scrubbed_at"]
    assert await maintenance.sweep_purge(ctx, clock.now()) == 0


async def test_sweep_consolidation_merges_duplicates(
    client: httpx.AsyncClient, tenant: Tenant, ctx: AppContext, owner_db: asyncpg.Pool
) -> None:
    first = await _write(client, tenant, "cs", statement="The user keeps bees")
    async with owner_db.acquire() as conn:
        # a duplicate that slipped past the write path (e.g. written before a fix)
        # read, then insert: Citus plans no INSERT ... SELECT ... RETURNING of this shape
        src = await conn.fetchrow(
            """SELECT tenant_id, user_id, scope, type, statement, statement_key, polarity,
                      source_kind, valid_from, policy_version
               FROM facts WHERE tenant_id = $1 AND id = $2""",
            tenant.id,
            uuid.UUID(first["id"]),
        )
        assert src is not None
        dup = await conn.fetchval(
            """INSERT INTO facts (id, tenant_id, user_id, scope, type, statement, statement_key,
                   polarity, source_kind, confidence, valid_from, status, policy_version,
                   observations, created_at)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 0.9, $10, 'active', $11, 2, now())
               RETURNING id""",
            uuid.uuid4(),
            *src.values(),
        )
    assert await maintenance.sweep_consolidation(ctx, clock.now()) == 1
    [fact] = await facts_of(client, tenant, "cs")
    assert fact["id"] == first["id"] and fact["observations"] == 3 and fact["confidence"] >= 0.9
    async with owner_db.acquire() as conn:
        assert (
            await conn.fetchval("SELECT archived_reason FROM facts WHERE id = $1", dup) == "merged"
        )
    assert await maintenance.sweep_consolidation(ctx, clock.now()) == 0


async def test_cron_schedule_is_registered() -> None:
    names = {job.name for job in maintenance.cron_jobs()}
    assert names == {f"memgate:sweep:{n}" for n in maintenance.SWEEPS}


# ---------------------------------------------------------------------------------------
# The LLM extractor behind the same pipeline


@asynccontextmanager
async def llm_context(
    app_ctx: AppContext, base_url: str, **settings: Any
) -> AsyncIterator[AppContext]:
    update = {"extractor": "llm", "llm_base_url": base_url, "job_retry_base_s": 0.05, **settings}
    yield dataclasses.replace(app_ctx, settings=app_ctx.settings.model_copy(update=update))


async def test_llm_extractor_errors_retry_then_write_once(
    client: httpx.AsyncClient, tenant: Tenant, ctx: AppContext
) -> None:
    from tests.fakes.openai_fake import OpenAIFake, Reply

    good = {
        "candidates": [
            {
                "type": "profile",
                "predicate": "preferred_output_format",
                "value": "table",
                "statement": "The user wants tables",
                "evidence": "always use tables",
                "confidence": 0.9,
                "turn_id": "L1",
                "explicit": True,
            }
        ]
    }
    with OpenAIFake() as fake:
        fake.chat_script.append(Reply.chat("not json {"))  # attempt 1: malformed
        fake.chat_script.extend(Reply.error(429, retry_after=0.01) for _ in range(4))  # attempt 2
        fake.chat_script.extend(Reply.chat(good, delay=1.0) for _ in range(4))  # 3: timeouts
        fake.chat_script.append(Reply.chat(good))  # attempt 4: ok
        async with llm_context(ctx, fake.base_url, llm_timeout_s=0.3) as llm_ctx:
            async with running_worker(llm_ctx):
                job = await observe(
                    client,
                    tenant,
                    "llm1",
                    [
                        u("user", "From now on always use tables", "L1"),
                        u("assistant", "Noted.", "L2"),
                    ],
                )
                body = await wait_job(client, tenant, job, within=30)
        assert len(fake.chat_requests) == 10
    assert body["state"] == "done" and body["attempts"] == 4 and "error" not in body
    assert [d["decision"] for d in body["decisions"]] == ["written"]
    [fact] = await facts_of(client, tenant, "llm1")
    assert fact["value"] == "table" and fact["source"]["kind"] == "explicit_instruction"


async def test_llm_extractor_failing_for_good_fails_the_job_and_writes_nothing(
    client: httpx.AsyncClient, tenant: Tenant, ctx: AppContext
) -> None:
    from tests.fakes.openai_fake import OpenAIFake, Reply

    with OpenAIFake() as fake:
        fake.chat_script.extend(Reply.chat('{"candidates": [{"type": 1}]}') for _ in range(9))
        async with llm_context(ctx, fake.base_url, job_max_tries=3) as llm_ctx:
            async with running_worker(llm_ctx):
                job = await observe(client, tenant, "llm2", [u("user", "I love Italian food")])
                body = await wait_job(client, tenant, job, within=30)
    assert body["state"] == "failed" and body["attempts"] == 3
    assert "malformed" in body["error"]
    assert await facts_of(client, tenant, "llm2") == []
    assert await candidates_of(client, tenant, "llm2") == []


async def test_sweep_missing_vectors_gives_an_unvectored_fact_its_vector(
    client: httpx.AsyncClient, tenant: Tenant, ctx: AppContext, owner_db: asyncpg.Pool
) -> None:
    """A fact stored while the embedder failed has no vector, and the dense channel
    cannot find it; the sweep embeds it (and only it), and recall's dense channel sees it."""
    lost = await _write(client, tenant, "mv", statement="The user's cat is called Biscuit")
    kept = await _write(client, tenant, "mv", statement="The user drives a Volvo")
    async with owner_db.acquire() as conn:
        before = await conn.fetchval(
            "SELECT embedding::text FROM facts WHERE id = $1", uuid.UUID(kept["id"])
        )
        await conn.execute(  # as app.writer `_embed` leaves it when the embedder fails
            "UPDATE facts SET embedding = NULL, embedding_model = NULL WHERE id = $1",
            uuid.UUID(lost["id"]),
        )

    async def dense_ids() -> set[str]:
        res = await client.post(
            "/v1/users/mv/recall",
            json={"query": "what is my pet's name?", "k": 5, "min_score": 0},
            headers=tenant.h(),
        )
        assert res.status_code == 200, res.text
        return {f["id"] for f in res.json()["facts"] if "dense" in f["channels"]}

    assert lost["id"] not in await dense_ids()
    assert await maintenance.sweep_missing_vectors(ctx, clock.now()) >= 1
    async with owner_db.acquire() as conn:
        rows = {
            str(r["id"]): r
            for r in await conn.fetch(
                "SELECT id, embedding IS NOT NULL AS has, embedding_model, embedding::text AS v"
                " FROM facts WHERE tenant_id = $1 AND user_id = 'mv'",
                tenant.id,
            )
        }
    assert ctx.embedder is not None
    assert rows[lost["id"]]["has"] and rows[lost["id"]]["embedding_model"] == ctx.embedder.model
    assert rows[kept["id"]]["v"] == before  # a fact with its vector is left alone
    assert lost["id"] in await dense_ids()
    # idempotent for this user's facts (other tests' tenants may still have some)
    async with owner_db.acquire() as conn:
        assert not await conn.fetchval(
            "SELECT count(*) FROM facts WHERE tenant_id = $1 AND embedding IS NULL", tenant.id
        )
