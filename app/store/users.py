"""Everything kept about one user, across tables: export and forget-me (docs/api.md#endpoints,
docs/lifecycle.md#forget-me).

Forget-me deletes the user's rows outright (facts of every status with their history
text and embeddings, candidates, recall log, jobs whose payload quotes the user,
idempotency replays that echo them, state), keeps tombstone hashes so the same content
is not silently re-learned, and reduces the user's audit events to content-free records.
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import datetime
from typing import Any

import asyncpg

from app.memory.normalize import tombstone_hashes
from app.store import idempotency
from app.store.facts import FACT_COLUMNS, FORGOTTEN_IN_FUNCTION, TOMBSTONED_IN_FUNCTION


async def all_facts(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, user_id: str
) -> list[asyncpg.Record]:
    """Every non-deleted fact of the user (all statuses, all scopes), oldest first."""
    return list(
        await conn.fetch(
            f"""SELECT {FACT_COLUMNS} FROM facts
                WHERE tenant_id = $1 AND user_id = $2 AND status <> 'deleted'
                ORDER BY created_at, id""",
            tenant_id,
            user_id,
        )
    )


async def version_links(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, user_id: str
) -> list[asyncpg.Record]:
    """(id, supersedes, status) of every row of the user, deleted ones included: the
    links of a version chain survive the erasure of its text."""
    return list(
        await conn.fetch(
            """SELECT id, supersedes, status FROM facts WHERE tenant_id = $1 AND user_id = $2""",
            tenant_id,
            user_id,
        )
    )


async def all_candidates(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, user_id: str
) -> list[asyncpg.Record]:
    from app.store.candidates import CANDIDATE_COLUMNS

    return list(
        await conn.fetch(
            f"""SELECT {CANDIDATE_COLUMNS} FROM candidates
                WHERE tenant_id = $1 AND user_id = $2 AND status <> 'deleted'
                ORDER BY created_at, id""",
            tenant_id,
            user_id,
        )
    )


async def state(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, user_id: str
) -> asyncpg.Record | None:
    return await conn.fetchrow(
        """SELECT last_interaction_at, last_session_id, last_session_hint, last_session_scope,
                  updated_at
           FROM user_state WHERE tenant_id = $1 AND user_id = $2""",
        tenant_id,
        user_id,
    )


async def recalls(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, user_id: str, limit: int = 10_000
) -> list[asyncpg.Record]:
    return list(
        await conn.fetch(
            """SELECT trace_id, scope, fact_ids, tokens, tier, created_at FROM recall_log
               WHERE tenant_id = $1 AND user_id = $2 ORDER BY created_at, id LIMIT $3""",
            tenant_id,
            user_id,
            limit,
        )
    )


async def upsert_state(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    user_id: str,
    now: datetime,
    *,
    interaction_at: datetime | None = None,
    session: tuple[str, str | None, str] | None = None,
) -> None:
    """The one write of a user's state. `interaction_at` only moves the last interaction
    forward (GREATEST skips a NULL); `session` (id, hint, scope) replaces the last
    session's fields, a NULL hint included; a field not given keeps its value."""
    session_id, hint, scope = session if session is not None else (None, None, None)
    await conn.execute(
        """INSERT INTO user_state (tenant_id, user_id, last_interaction_at, last_session_id,
                                   last_session_hint, last_session_scope, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7)
           ON CONFLICT (tenant_id, user_id) DO UPDATE
           SET last_interaction_at = GREATEST(user_state.last_interaction_at,
                                              EXCLUDED.last_interaction_at),
               last_session_id = CASE WHEN $8 THEN EXCLUDED.last_session_id
                                      ELSE user_state.last_session_id END,
               last_session_hint = CASE WHEN $8 THEN EXCLUDED.last_session_hint
                                        ELSE user_state.last_session_hint END,
               last_session_scope = CASE WHEN $8 THEN EXCLUDED.last_session_scope
                                         ELSE user_state.last_session_scope END,
               updated_at = EXCLUDED.updated_at""",
        tenant_id,
        user_id,
        interaction_at,
        session_id,
        hint,
        scope,
        now,
        session is not None,
    )


def _count(status: str) -> int:
    return int(status.split()[-1])


def user_lock_key(tenant_id: uuid.UUID, user_id: str) -> str:
    return f"{tenant_id}|{user_id}|user"


# The fence in one round trip: the shared lock, then (a new snapshot: plpgsql, read
# committed) whether a forget-me committed since the write began, and the tombstones of
# the content about to be screened. Installed by the migration runner, named by its hash.
_FENCE_ARGS = """p_lock_key text, p_tenant uuid, p_user text, p_started timestamptz,
    p_scope text, p_hashes text[]"""
_FENCE_BODY = f"""
BEGIN
  PERFORM pg_advisory_xact_lock_shared(hashtextextended(p_lock_key, 0));
  forgotten := {FORGOTTEN_IN_FUNCTION};
  tombstoned := {TOMBSTONED_IN_FUNCTION};
  RETURN NEXT;
END"""
FENCE_FUNCTION = (
    "memgate_fence_" + hashlib.sha256((_FENCE_ARGS + _FENCE_BODY).encode()).hexdigest()[:12]
)
FENCE_FUNCTION_DDL = f"""
CREATE OR REPLACE FUNCTION {FENCE_FUNCTION}({_FENCE_ARGS})
RETURNS TABLE (forgotten boolean, tombstoned text[])
LANGUAGE plpgsql VOLATILE AS $fence$
#variable_conflict use_column
{_FENCE_BODY}
$fence$;
REVOKE ALL ON FUNCTION {FENCE_FUNCTION}({_FENCE_ARGS}) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION {FENCE_FUNCTION}({_FENCE_ARGS}) TO memgate_app;
"""


async def fence_user(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    user_id: str,
    started_at: datetime,
    *,
    scope: str = "global",
    hashes: list[str] | None = None,
) -> tuple[bool, set[str]]:
    """Every write about a user calls this first in its transaction: it holds the user's
    lock in shared mode until commit (forget-me takes it exclusively, so it waits for
    writes in flight and they wait for it), then tells whether the user was forgotten
    at or after `started_at`, the time the write's request (or job) began. A write that
    began before a forget-me must not survive it: the caller refuses it.

    Returns (forgotten, tombstoned): the hashes among `hashes` (a content's, in `scope`)
    that are tombstoned, read in the same round trip."""
    row = await conn.fetchrow(
        f"SELECT forgotten, tombstoned FROM {FENCE_FUNCTION}($1, $2, $3, $4, $5, $6)",
        user_lock_key(tenant_id, user_id),
        tenant_id,
        user_id,
        started_at,
        scope,
        hashes or [],
    )
    assert row is not None
    return bool(row["forgotten"]), set(row["tombstoned"] or ())


async def try_share_user(conn: asyncpg.Connection, tenant_id: uuid.UUID, user_id: str) -> bool:
    """The fence's shared lock if it is free now (False while a forget-me holds or awaits
    it): for a sweep that already holds other rows and must never wait on forget-me."""
    return bool(
        await conn.fetchval(
            "SELECT pg_try_advisory_xact_lock_shared(hashtextextended($1, 0))",
            user_lock_key(tenant_id, user_id),
        )
    )


async def lock_user(conn: asyncpg.Connection, tenant_id: uuid.UUID, user_id: str) -> None:
    """Forget-me's side of the fence: the user's lock, exclusively, until commit."""
    await conn.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
        user_lock_key(tenant_id, user_id),
    )


async def forget_state(conn: asyncpg.Connection, tenant_id: uuid.UUID, user_id: str) -> int:
    return _count(
        await conn.execute(
            "DELETE FROM user_state WHERE tenant_id = $1 AND user_id = $2", tenant_id, user_id
        )
    )


async def forget(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, user_id: str, now: datetime
) -> dict[str, int]:
    """Erase the user's rows (call inside the tenant transaction); returns counts."""
    rows = await conn.fetch(
        """SELECT id, scope, predicate, value, statement, source_kind, source_trace_id
           FROM facts WHERE tenant_id = $1 AND user_id = $2 AND status <> 'deleted'""",
        tenant_id,
        user_id,
    )
    tombstones = [
        (
            uuid.uuid4(),
            tenant_id,
            user_id,
            r["scope"],
            h,
            r["id"],
            {"fact_ids": [str(r["id"])], "source_kinds": [r["source_kind"]], "reason": "forget_me"},
            now,
        )
        for r in rows
        for h in sorted(
            set(tombstone_hashes(r["scope"], r["predicate"], r["value"], r["statement"]))
        )
    ]
    await conn.executemany(
        """INSERT INTO tombstones (id, tenant_id, user_id, scope, hash, fact_id, source_refs,
                                   created_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8)""",
        tombstones,
    )
    counts = {"facts": len(rows), "tombstones": len(tombstones)}
    await conn.execute(  # hit counters have no foreign key (see migrations/0003)
        """DELETE FROM fact_hits WHERE tenant_id = $1 AND fact_id IN
               (SELECT id FROM facts WHERE tenant_id = $1 AND user_id = $2)""",
        tenant_id,
        user_id,
    )
    await conn.execute(
        "DELETE FROM facts WHERE tenant_id = $1 AND user_id = $2", tenant_id, user_id
    )
    counts["candidates"] = _count(
        await conn.execute(
            "DELETE FROM candidates WHERE tenant_id = $1 AND user_id = $2", tenant_id, user_id
        )
    )
    counts["recall_log"] = _count(
        await conn.execute(
            "DELETE FROM recall_log WHERE tenant_id = $1 AND user_id = $2", tenant_id, user_id
        )
    )
    # Job payloads quote the user's turns (redacted, but still their words); a queued
    # observe job deleted here finds no row and does nothing.
    counts["jobs"] = _count(
        await conn.execute(
            """DELETE FROM jobs WHERE tenant_id = $1
               AND (user_id = $2 OR payload->>'user_id' = $2)""",
            tenant_id,
            user_id,
        )
    )
    # Idempotency records replay responses, and responses quote facts: each record of a
    # request about the user carries the user's id (app/api/idempotency.py).
    counts["idempotency"] = await idempotency.forget_user(conn, tenant_id, user_id)
    # The trail of what happened stays; what it said about the user does not.
    counts["audit_redacted"] = _count(
        await conn.execute(
            """UPDATE audit_events SET detail = '{"erased": true}'::jsonb
           WHERE tenant_id = $1 AND user_id = $2""",
            tenant_id,
            user_id,
        )
    )
    counts["user_state"] = _count(
        await conn.execute(
            "DELETE FROM user_state WHERE tenant_id = $1 AND user_id = $2", tenant_id, user_id
        )
    )
    return counts


def chains(links: list[Any]) -> dict[uuid.UUID, list[uuid.UUID]]:
    """For every visible fact id: the visible ids of its version chain, oldest first."""
    nxt: dict[uuid.UUID, list[uuid.UUID]] = {}
    prev: dict[uuid.UUID, uuid.UUID | None] = {}
    status: dict[uuid.UUID, str] = {}
    for r in links:
        prev[r["id"]] = r["supersedes"]
        status[r["id"]] = r["status"]
        if r["supersedes"] is not None:
            nxt.setdefault(r["supersedes"], []).append(r["id"])
    out: dict[uuid.UUID, list[uuid.UUID]] = {}
    for fid in prev:
        if status[fid] == "deleted" or fid in out:
            continue
        root, seen = fid, {fid}
        while (p := prev.get(root)) is not None and p in prev and p not in seen:
            root = p
            seen.add(p)
        order, stack = [], [root]
        while stack:
            cur = stack.pop(0)
            order.append(cur)
            stack.extend(n for n in sorted(nxt.get(cur, [])) if n not in order)
        visible = [i for i in order if status.get(i) != "deleted"]
        for i in visible:
            out[i] = visible
    return out
