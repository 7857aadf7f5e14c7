"""The set-based batch writer (app.writer.write_many, docs/api.md#bulk-import): a batch
decides, stores, audits and answers exactly as its items written one at a time by
`app.writer.write` in the same transaction, at the same times — against real
PostgreSQL and the default embedder.

Two users of one tenant start from the same facts and tombstone; one gets the items one
by one, the other as a batch. Ids differ (they are random); everything else must match,
with ids replaced by their order of appearance."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta
from typing import Any

import asyncpg
import httpx

from app import clock
from app.api.facts import candidate_from
from app.api.schemas.facts import FactIn
from app.importer import _fence_and_lock, _nth
from app.services.policies import tenant_policy
from app.store.db import tenant_tx
from app.writer import SYSTEM_RIGHTS, embed_and_screen, embed_candidates, write, write_many
from tests.conftest import Tenant

AWS_KEY = "AKIAZ7Q3X5M2N8P4R6TB"


def fact(statement: str, **extra: Any) -> dict[str, Any]:
    return {"type": "semantic", "statement": statement, "source": {"kind": "user_message"}, **extra}


def pref(value: str, kind: str = "user_message", **extra: Any) -> dict[str, Any]:
    return {
        "type": "profile",
        "predicate": "preferred_language",
        "value": value,
        "statement": f"The user prefers {value} for answers",
        "source": {"kind": kind},
        **extra,
    }


SETUP = [
    pref("Chinese"),
    fact("The user drinks green tea every morning"),
    fact("The user lives in Berlin"),  # deleted below: its content is tombstoned
    fact("The user plays chess on weekends"),
]

ITEMS = [
    fact("The user prefers dark mode in every editor"),
    pref("English"),  # supersedes the stored Chinese (rule 3)
    fact("The user codes in Rust at work"),
    fact(f"The user's AWS key is {AWS_KEY}"),  # item 3: a secret, refused alone
    pref("French"),  # supersedes item 1's English
    fact("The user prefers dark mode in every editor"),  # a duplicate of item 0: merged
    fact("The user lives in Berlin"),  # tombstoned
    fact("The user drinks green tea every morning"),  # merges into a stored fact
    pref("French"),  # the same value again: merged into item 4's fact
    pref("German", valid_from="2020-01-01T00:00:00Z"),  # older than French: history
    fact("The user plays chess every weekend"),  # near the stored chess fact
    pref("Spanish", kind="admin_policy"),  # more authoritative: supersedes French
    pref("Italian"),  # less authoritative than Spanish: rejected
    fact("The user codes in Rust at work"),  # a duplicate of item 2: merged
    {
        "type": "episodic",
        "statement": "The user flew to Tokyo on 2024-05-01",
        "source": {"kind": "user_message"},
    },
    {
        "type": "episodic",
        "statement": "The user flew to Tokyo on 2024-05-01",
        "source": {"kind": "user_message"},
    },
]


async def _setup(client: httpx.AsyncClient, tenant: Tenant, user: str) -> None:
    for body in SETUP:
        res = await client.post(f"/v1/users/{user}/facts", json=body, headers=tenant.h())
        assert res.status_code in (200, 201), res.text
        if body["statement"] == "The user lives in Berlin":
            fact_id = res.json()["fact"]["id"]
            gone = await client.delete(f"/v1/users/{user}/facts/{fact_id}", headers=tenant.h())
            assert gone.status_code == 200, gone.text


class _Ids:
    """Random ids → their order of appearance, for comparing two users' rows; the times
    before `since` (the two users' setups ran one after the other) → "before"."""

    def __init__(self, since: datetime) -> None:
        self.seen: dict[str, str] = {}
        self.since = since

    def __call__(self, value: Any) -> Any:
        if isinstance(value, uuid.UUID):
            value = str(value)
        if isinstance(value, str):
            try:
                uuid.UUID(value)
            except ValueError:
                try:
                    return "before" if datetime.fromisoformat(value) < self.since else value
                except ValueError:
                    return value
            return self.seen.setdefault(value, f"id{len(self.seen)}")
        if isinstance(value, list):
            return [self(v) for v in value]
        if isinstance(value, dict):
            return {k: self(v) for k, v in value.items()}
        return value


_SKIP = {"tenant_id", "user_id", "search_tsv", "created_at_id"}


async def _stored(
    owner_db: asyncpg.Pool, tenant: Tenant, user: str, since: datetime
) -> dict[str, Any]:
    ids = _Ids(since)
    async with owner_db.acquire() as conn:
        facts = await conn.fetch(
            """SELECT to_jsonb(f) - 'tenant_id' - 'user_id' AS row, embedding::text AS vec
               FROM facts f WHERE tenant_id = $1 AND user_id = $2
               ORDER BY created_at, version, statement""",
            tenant.id,
            user,
        )
        events = await conn.fetch(
            """SELECT to_jsonb(a) - 'id' - 'tenant_id' - 'user_id' AS row
               FROM audit_events a WHERE tenant_id = $1 AND user_id = $2 ORDER BY id""",
            tenant.id,
            user,
        )
        state = await conn.fetchrow(
            """SELECT last_interaction_at FROM user_state
               WHERE tenant_id = $1 AND user_id = $2""",
            tenant.id,
            user,
        )
    rows = [json.loads(r["row"]) for r in facts]
    for row in rows:  # a setup fact's expiry follows its time, which differs per user
        if datetime.fromisoformat(row["created_at"]) < since:
            row.pop("expires_at")
    return {
        "facts": [ids({k: v for k, v in r.items() if k not in _SKIP}) for r in rows],
        "vectors": [r["vec"] for r in facts],
        "audit": [ids(json.loads(r["row"])) for r in events],
        "interaction": state["last_interaction_at"] if state else None,
        "_ids": ids,
    }


def _as(answers: list[dict[str, Any]], user: str) -> list[dict[str, Any]]:
    """The answers with the user's id left out (the two users' ids differ)."""
    out: list[dict[str, Any]] = json.loads(json.dumps(answers).replace(f'"{user}"', '"U"'))
    return out


def _flat(answer: dict[str, Any]) -> dict[str, Any]:
    """An answer as one flat row; a setup fact's expiry left out (it follows its time)."""
    fact = dict(answer.get("fact") or {})
    if fact.get("created_at") == "before":
        fact.pop("expires_at")
    return {
        **{k: v for k, v in answer.items() if k != "fact"},
        **{f"fact.{k}": v for k, v in fact.items()},
    }


def _diff(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> list[tuple[int, str, Any, Any]]:
    """Where two lists of rows differ: (row, column, one, other)."""
    out = [(-1, "len", len(a), len(b))] if len(a) != len(b) else []
    for n, (x, y) in enumerate(zip(a, b, strict=False)):
        out.extend((n, k, x.get(k), y.get(k)) for k in sorted(x | y) if x.get(k) != y.get(k))
    return out


async def test_a_batch_decides_and_stores_as_its_items_one_by_one(
    app: Any, client: httpx.AsyncClient, tenant: Tenant, owner_db: asyncpg.Pool
) -> None:
    ctx = app.state.ctx
    tag = uuid.uuid4().hex[:6]
    # one by one; a batch; a batch screened before its transaction (as facts:batch runs)
    one, many, ahead = f"seq-{tag}", f"bat-{tag}", f"pre-{tag}"
    for user in (one, many, ahead):
        await _setup(client, tenant, user)
    policy = await tenant_policy(ctx, tenant.id)
    now = clock.now()
    nows = [_nth(now, n) for n in range(len(ITEMS))]
    answers: dict[str, list[dict[str, Any]]] = {}
    for user in (one, many, ahead):
        cs = [candidate_from(FactIn.model_validate(i), user) for i in ITEMS]
        screened = None
        if user == ahead:
            embedded, screened = await embed_and_screen(ctx, tenant.id, SYSTEM_RIGHTS, cs, policy)
        else:
            embedded = await embed_candidates(ctx, cs, policy)
        async with tenant_tx(ctx.pool, tenant.id) as conn:
            await _fence_and_lock(conn, tenant.id, cs, now)
            if user == one:
                outs = [
                    await write(ctx, conn, tenant.id, SYSTEM_RIGHTS, c, policy, t, embedded=e)
                    for c, e, t in zip(cs, embedded, nows, strict=True)
                ]
            else:
                outs = await write_many(
                    ctx, conn, tenant.id, SYSTEM_RIGHTS, cs, policy, nows, embedded, screened
                )
        answers[user] = [o.body() for o in outs]

    decisions = [a["decision"] for a in answers[one]]
    # the cases this test is about did happen
    assert decisions[3] == "rejected" and answers[one][3]["reason"] == "secret_detected"
    assert decisions[1] == decisions[4] == decisions[11] == "superseded"
    assert decisions[5] == decisions[7] == decisions[8] == decisions[13] == "merged"
    assert decisions[6] == "rejected" and answers[one][6]["reason"] == "tombstoned"
    assert decisions[12] == "rejected" and answers[one][12]["reason"] == "lower_authority"
    assert decisions[15] == "merged"

    seq = await _stored(owner_db, tenant, one, now)
    theirs = seq["_ids"](_as(answers[one], one))
    for user in (many, ahead):
        bat = await _stored(owner_db, tenant, user, now)
        differ = _diff(bat["facts"], seq["facts"])
        assert not differ, "\n".join(map(str, differ))
        assert bat["facts"] == seq["facts"]
        assert bat["vectors"] == seq["vectors"]
        assert bat["audit"] == seq["audit"]
        assert bat["interaction"] == seq["interaction"]
        # the answers name the same facts (in the ids' order of appearance in the rows)
        mine = bat["_ids"](_as(answers[user], user))
        differ = _diff([_flat(a) for a in mine], [_flat(a) for a in theirs])
        assert not differ, "\n".join(map(str, differ))


async def test_a_batch_of_many_near_duplicates_decides_as_one_by_one(
    app: Any, tenant: Tenant, owner_db: asyncpg.Pool
) -> None:
    """More than a pool's worth (20) of similar free statements, repeats among them: each
    item's pool mixes stored facts and the batch's own, ordered and cut as the single
    write's."""
    ctx = app.state.ctx
    topics = ["tea", "chess", "jazz", "Rust", "hiking", "sushi", "Go", "cycling"]
    items = [
        fact(f"The user likes {topics[n % 30 % 8]} variant number {n % 30}") for n in range(90)
    ]
    items[50:60] = [
        fact(f"The user really likes {topics[n % 8]} variant number {n}") for n in range(10)
    ]
    one, many = f"seq-{uuid.uuid4().hex[:6]}", f"bat-{uuid.uuid4().hex[:6]}"
    policy = await tenant_policy(ctx, tenant.id)
    now = start = clock.now()
    answers: dict[str, list[dict[str, Any]]] = {}
    for user in (one, many):
        now = start
        for part in (items[:40], items[40:]):  # the second part meets stored facts
            cs = [candidate_from(FactIn.model_validate(i), user) for i in part]
            nows = [_nth(now, n) for n in range(len(cs))]
            embedded = await embed_candidates(ctx, cs, policy)
            async with tenant_tx(ctx.pool, tenant.id) as conn:
                await _fence_and_lock(conn, tenant.id, cs, now)
                if user == one:
                    outs = [
                        await write(ctx, conn, tenant.id, SYSTEM_RIGHTS, c, policy, t, embedded=e)
                        for c, e, t in zip(cs, embedded, nows, strict=True)
                    ]
                else:
                    outs = await write_many(
                        ctx, conn, tenant.id, SYSTEM_RIGHTS, cs, policy, nows, embedded
                    )
            answers.setdefault(user, []).extend(o.body() for o in outs)
            now += timedelta(seconds=1)
    assert "merged" in [a["decision"] for a in answers[one]]
    seq = await _stored(owner_db, tenant, one, start)
    bat = await _stored(owner_db, tenant, many, start)
    assert bat["facts"] == seq["facts"]
    assert bat["audit"] == seq["audit"]
    assert bat["_ids"](_as(answers[many], many)) == seq["_ids"](_as(answers[one], one))


async def test_a_delete_between_the_screening_and_the_batch_is_seen(
    app: Any, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """The batch is screened before its transaction (app.writer.embed_and_screen); a fact
    deleted after that screening is tombstoned when the batch writes: the item that
    repeats it is refused, as a single write after the delete would be."""
    ctx = app.state.ctx
    user = f"late-{uuid.uuid4().hex[:6]}"
    res = await client.post(
        f"/v1/users/{user}/facts", json=fact("The user lives in Lisbon"), headers=tenant.h()
    )
    assert res.status_code == 201, res.text
    items = [fact("The user lives in Lisbon"), fact("The user sails on Sundays")]
    cs = [candidate_from(FactIn.model_validate(i), user) for i in items]
    policy = await tenant_policy(ctx, tenant.id)
    embedded, ahead = await embed_and_screen(ctx, tenant.id, SYSTEM_RIGHTS, cs, policy)
    assert ahead.results == [None, None]  # both passed the screening
    gone = await client.delete(
        f"/v1/users/{user}/facts/{res.json()['fact']['id']}", headers=tenant.h()
    )
    assert gone.status_code == 200, gone.text
    now = clock.now()
    async with tenant_tx(ctx.pool, tenant.id) as conn:
        await _fence_and_lock(conn, tenant.id, cs, now)
        outs = await write_many(
            ctx, conn, tenant.id, SYSTEM_RIGHTS, cs, policy, [now, _nth(now, 1)], embedded, ahead
        )
    assert [(o.decision.value, o.reason.value if o.reason else None) for o in outs] == [
        ("rejected", "tombstoned"),
        ("written", None),
    ]
