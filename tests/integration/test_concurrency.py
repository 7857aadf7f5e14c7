"""Concurrent writers over a live server (uvicorn on a loopback socket): one lineage never
forks, a delete wins over what races it, near-duplicates written at once merge, and a
forget-me leaves nothing behind from the requests that were in flight when it began.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import datetime
from typing import Any

import asyncpg
import httpx
import orjson
import pytest

from tests.conftest import Tenant


def _uid() -> str:
    return f"c-{uuid.uuid4().hex[:8]}"


async def _post(http: httpx.AsyncClient, t: Tenant, u: str, body: dict[str, Any]) -> Any:
    return await http.post(f"/v1/users/{u}/facts", json=body, headers=t.h())


async def _active(owner_db: asyncpg.Pool, t: Tenant, u: str) -> list[asyncpg.Record]:
    return list(
        await owner_db.fetch(
            "SELECT id, statement, created_at FROM facts WHERE tenant_id = $1 AND user_id = $2"
            " AND status = 'active'",
            t.id,
            u,
        )
    )


async def _patch_race(
    http: httpx.AsyncClient,
    t: Tenant,
    owner_db: asyncpg.Pool,
    body: dict[str, Any],
    n: int,
    change: Any,
) -> None:
    u = _uid()
    first = (await _post(http, t, u, body)).json()["fact"]
    answers = await asyncio.gather(
        *[
            http.patch(f"/v1/users/{u}/facts/{first['id']}", headers=t.h(), json=change(i))
            for i in range(n)
        ]
    )
    codes = sorted(a.status_code for a in answers)
    assert codes.count(201) == 1 and codes.count(409) == n - 1, [a.text[:200] for a in answers]
    winner = next(a for a in answers if a.status_code == 201).json()["fact"]
    for lost in (a for a in answers if a.status_code == 409):
        err = lost.json()["error"]
        assert err["code"] == "conflict" and err["details"]["current"] == winner["id"]
    active = await _active(owner_db, t, u)
    assert [r["id"] for r in active] == [uuid.UUID(winner["id"])]


async def test_concurrent_patches_of_a_free_statement_leave_one_version(
    http: httpx.AsyncClient, tenant: Tenant, owner_db: asyncpg.Pool
) -> None:
    body = {
        "type": "semantic",
        "statement": "用户在学习西班牙语",
        "source": {"kind": "explicit_instruction"},
    }
    await _patch_race(
        http, tenant, owner_db, body, 8, lambda i: {"statement": f"用户在学习西班牙语和第{i}门外语"}
    )


async def test_concurrent_patches_of_a_predicate_fact_leave_one_version(
    http: httpx.AsyncClient, tenant: Tenant, owner_db: asyncpg.Pool
) -> None:
    body = {
        "type": "semantic",
        "predicate": "favorite_city",
        "value": "Lisbon",
        "statement": "The user's favourite city is Lisbon",
        "source": {"kind": "explicit_instruction"},
    }
    await _patch_race(
        http,
        tenant,
        owner_db,
        body,
        16,
        lambda i: {"value": f"City {i}", "statement": f"The user's favourite city is City {i}"},
    )


async def test_a_delete_wins_over_patches_and_posts_racing_it(
    http: httpx.AsyncClient, tenant: Tenant, owner_db: asyncpg.Pool
) -> None:
    u = _uid()
    body = {
        "type": "semantic",
        "statement": "用户每周三去游泳",
        "source": {"kind": "explicit_instruction"},
    }
    fact = (await _post(http, tenant, u, body)).json()["fact"]
    again = {**body, "source": {"kind": "user_message"}}  # not explicit: tombstoned after
    patches = [
        http.patch(
            f"/v1/users/{u}/facts/{fact['id']}",
            headers=tenant.h(),
            json={"statement": f"用户每周三去游泳，第{i}次改"},
        )
        for i in range(6)
    ]
    posts = [_post(http, tenant, u, again) for _ in range(6)]
    delete = http.delete(f"/v1/users/{u}/facts/{fact['id']}", headers=tenant.h())
    answers = await asyncio.gather(*patches[:3], *posts[:3], delete, *patches[3:], *posts[3:])
    assert all(a.status_code < 500 for a in answers), [a.text for a in answers]
    deleted = answers[6]
    assert deleted.status_code == 200 and deleted.json()["status"] == "deleted"
    for a in answers[7:]:  # after the delete: refused, or a conflict / 404 on the version
        if a.request.method == "PATCH":
            assert a.status_code in (201, 404, 409)
    # Whatever a PATCH or a merging POST added before the delete was part of the chain
    # and went with it; a re-write after it is tombstoned. Only a POST that raced ahead of
    # the delete and was written as a fact of its own (its statement no longer matched the
    # corrected version) may remain.
    separate = {
        uuid.UUID(a.json()["fact"]["id"])
        for a in answers
        if a.request.method == "POST" and a.json().get("decision") == "written"
    }
    active = await _active(owner_db, tenant, u)
    assert {r["id"] for r in active} <= separate, [r["statement"] for r in active]
    chain = await owner_db.fetch(
        "SELECT status FROM facts WHERE tenant_id = $1 AND (id = $2 OR supersedes = $2)",
        tenant.id,
        uuid.UUID(fact["id"]),
    )
    assert chain and all(r["status"] == "deleted" for r in chain)


async def test_near_duplicates_written_at_once_merge_like_in_sequence(
    http: httpx.AsyncClient, tenant: Tenant, owner_db: asyncpg.Pool
) -> None:
    a = {
        "type": "semantic",
        "statement": "用户喜欢在周末去爬山",
        "source": {"kind": "user_message"},
    }
    b = {**a, "statement": "用户喜欢周末去爬山"}
    u = _uid()
    await _post(http, tenant, u, a)
    assert (await _post(http, tenant, u, b)).json()["decision"] == "merged"  # in sequence
    for _ in range(3):
        u = _uid()
        answers = await asyncio.gather(_post(http, tenant, u, a), _post(http, tenant, u, b))
        assert sorted(x.json()["decision"] for x in answers) == ["merged", "written"]
        assert len(await _active(owner_db, tenant, u)) == 1


async def test_forget_me_leaves_nothing_of_the_requests_in_flight(
    http: httpx.AsyncClient, tenant_factory: Any, owner_db: asyncpg.Pool, stack: Any
) -> None:
    t = await tenant_factory()
    u = _uid()
    token = (await http.post(f"/v1/users/{u}/tokens", json={}, headers=t.h("portal"))).json()
    sid = f"s-{uuid.uuid4().hex[:8]}"

    async def one(i: int) -> None:
        kinds = (
            lambda: _post(
                http,
                t,
                u,
                {
                    "type": "episodic",
                    "statement": f"用户第{i}次去了健身房",
                    "source": {"kind": "explicit_instruction"},
                },
            ),
            lambda: http.post(
                f"/v1/sessions/{sid}-{i % 3}/turns",
                headers=t.h(),
                json={"user_id": u, "role": "user", "content": f"第{i}条消息"},
            ),
            lambda: http.post(
                f"/v1/users/{u}/observations",
                headers=t.h(),
                json={"messages": [{"role": "user", "content": f"记住我喜欢{i}号球衣"}]},
            ),
        )
        r = await kinds[i % 3]()
        assert r.status_code < 500, r.text

    async def traffic(lane: int) -> None:
        # bounded: each lane sends requests back to back for about a second
        loop = asyncio.get_running_loop()
        until = loop.time() + 1.2
        i = lane
        while loop.time() < until:
            await one(i)
            i += 8

    async def forget() -> httpx.Response:
        await asyncio.sleep(0.4)  # in the middle of the traffic
        return await http.delete("/v1/me", headers={"Authorization": f"Bearer {token['token']}"})

    results = await asyncio.gather(forget(), *[traffic(lane) for lane in range(8)])
    assert results[0].status_code == 200, results[0].text
    began: datetime = await owner_db.fetchval(
        "SELECT created_at FROM audit_events WHERE tenant_id = $1 AND user_id = $2"
        " AND action = 'forget_me'",
        t.id,
        u,
    )
    assert began is not None
    # Nothing that began before the forget-me survives it (later requests may write anew).
    left = await owner_db.fetch(
        "SELECT created_at FROM facts WHERE tenant_id = $1 AND user_id = $2"
        " AND status <> 'deleted' AND created_at < $3",
        t.id,
        u,
        began,
    )
    assert left == []
    jobs = await owner_db.fetch(
        "SELECT created_at FROM jobs WHERE tenant_id = $1 AND user_id = $2 AND created_at < $3",
        t.id,
        u,
        began,
    )
    assert jobs == []
    state = await owner_db.fetchrow(
        "SELECT last_interaction_at FROM user_state WHERE tenant_id = $1 AND user_id = $2",
        t.id,
        u,
    )
    assert state is None or state["last_interaction_at"] >= began
    import redis.asyncio as aioredis

    r = aioredis.from_url(stack.redis_url)
    try:
        for key in [k async for k in r.scan_iter(f"mg:{{{t.id}:*}}:sess:*")]:
            data = await r.hgetall(key)
            owner = data.get(b"user_id", b"").decode()
            created = data.get(b"created_at", b"").decode()
            if owner == u and created:
                assert datetime.fromisoformat(created) >= began, orjson.dumps(
                    {k.decode(): v.decode(errors="replace") for k, v in data.items()}
                )
    finally:
        await r.aclose()


async def test_forget_me_waits_for_a_write_in_flight_and_erases_it(
    http: httpx.AsyncClient, tenant: Tenant, owner_db: asyncpg.Pool
) -> None:
    """Deterministic in-flight: the test holds the user's state row, so a write that
    began before the forget-me is still open (blocked at its last statement) when the
    forget-me arrives."""
    u = _uid()
    t = tenant
    write = {
        "type": "semantic",
        "statement": "用户的车牌尾号是 7",
        "source": {"kind": "explicit_instruction"},
    }
    assert (await _post(http, t, u, write)).status_code == 201  # user_state exists now
    token = (await http.post(f"/v1/users/{u}/tokens", json={}, headers=t.h("portal"))).json()[
        "token"
    ]
    holder = await owner_db.acquire()
    try:
        tx = holder.transaction()
        await tx.start()
        await holder.execute(
            "SELECT 1 FROM user_state WHERE tenant_id = $1 AND user_id = $2 FOR UPDATE", t.id, u
        )
        in_flight = asyncio.create_task(_post(http, t, u, {**write, "statement": "用户养了两只猫"}))
        await asyncio.sleep(0.6)
        assert not in_flight.done()
        forget = asyncio.create_task(
            http.delete("/v1/me", headers={"Authorization": f"Bearer {token}"})
        )
        await asyncio.sleep(0.6)
        await tx.commit()
    finally:
        await owner_db.release(holder)
    written, forgotten = await in_flight, await forget
    assert forgotten.status_code == 200
    assert written.status_code in (201, 409)
    left = await owner_db.fetch(
        "SELECT statement FROM facts WHERE tenant_id = $1 AND user_id = $2 AND status <> 'deleted'",
        t.id,
        u,
    )
    assert left == []
    assert (
        await owner_db.fetchval(
            "SELECT count(*) FROM user_state WHERE tenant_id = $1 AND user_id = $2", t.id, u
        )
        == 0
    )


@pytest.mark.parametrize(
    "body",
    [
        # a plain pass: the fence rides in the subject lock's round trip (app/writer.py)
        {"type": "semantic", "statement": "用户养了两只猫", "source": {"kind": "user_message"}},
        # held for consent: the fence is taken before the screening with tombstones
        {
            "type": "semantic",
            "statement": "I was diagnosed with asthma last year",
            "source": {"kind": "user_message"},
        },
    ],
)
async def test_a_write_that_began_before_a_forget_me_committed_is_refused(
    http: httpx.AsyncClient, tenant: Tenant, owner_db: asyncpg.Pool, body: dict[str, Any]
) -> None:
    """Deterministic: the test holds the user's lock as a forget-me does, the write waits
    at its fence, and the forget-me's audit row commits after the write began: the write
    answers 409 and leaves nothing."""
    u = _uid()
    t = tenant
    holder = await owner_db.acquire()
    try:
        tx = holder.transaction()
        await tx.start()
        await holder.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", f"{t.id}|{u}|user"
        )
        in_flight = asyncio.create_task(_post(http, t, u, body))
        await asyncio.sleep(0.6)
        assert not in_flight.done()
        await holder.execute(
            "INSERT INTO audit_events (tenant_id, user_id, action, created_at)"
            " VALUES ($1, $2, 'forget_me', clock_timestamp())",
            t.id,
            u,
        )
        await tx.commit()
    finally:
        await owner_db.release(holder)
    r = await in_flight
    assert r.status_code == 409, r.text
    assert "user_forgotten" in r.text
    for table in ("facts", "candidates"):
        n = await owner_db.fetchval(
            f"SELECT count(*) FROM {table} WHERE tenant_id = $1 AND user_id = $2", t.id, u
        )
        assert n == 0, table


async def test_a_write_waiting_behind_a_delete_sees_its_tombstone(
    http: httpx.AsyncClient, tenant: Tenant, owner_db: asyncpg.Pool
) -> None:
    u = _uid()
    t = tenant
    body = {
        "type": "profile",
        "predicate": "favorite_color",
        "value": "teal",
        "statement": "my favorite color is teal",
        "source": {"kind": "user_message"},
    }
    fact = (await _post(http, t, u, body)).json()["fact"]
    holder = await owner_db.acquire()
    try:
        tx = holder.transaction()
        await tx.start()
        await holder.execute(  # the lock the fact's writes take (app/writer.py)
            "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
            f"{t.id}|{u}|global|p:favorite_color",
        )
        delete = asyncio.create_task(
            http.delete(f"/v1/users/{u}/facts/{fact['id']}", headers=t.h())
        )
        await asyncio.sleep(0.3)
        again = asyncio.create_task(_post(http, t, u, body))
        await asyncio.sleep(0.3)
        await tx.commit()
    finally:
        await owner_db.release(holder)
    assert (await delete).status_code == 200
    answer = (await again).json()
    assert answer["decision"] == "rejected" and answer["reason"] == "tombstoned"
    assert await _active(owner_db, t, u) == []


async def test_feedback_on_a_fact_deleted_meanwhile_is_404(
    http: httpx.AsyncClient, tenant: Tenant, owner_db: asyncpg.Pool
) -> None:
    u = _uid()
    t = tenant
    fact = (
        await _post(
            http,
            t,
            u,
            {
                "type": "semantic",
                "statement": "用户喜欢骑行",
                "source": {"kind": "explicit_instruction"},
            },
        )
    ).json()["fact"]
    holder = await owner_db.acquire()
    try:
        tx = holder.transaction()
        await tx.start()
        await holder.execute(
            "SELECT 1 FROM facts WHERE tenant_id = $1 AND id = $2 FOR UPDATE",
            t.id,
            uuid.UUID(fact["id"]),
        )
        delete = asyncio.create_task(
            http.delete(f"/v1/users/{u}/facts/{fact['id']}", headers=t.h())
        )
        await asyncio.sleep(0.3)
        fb = asyncio.create_task(
            http.post(
                f"/v1/users/{u}/facts/{fact['id']}/feedback",
                headers=t.h(),
                json={"useful": False, "note": "n"},
            )
        )
        await asyncio.sleep(0.3)
        await tx.commit()
    finally:
        await owner_db.release(holder)
    assert (await delete).status_code == 200
    assert (await fb).status_code in (200, 404)
    assert (await fb).status_code < 500
