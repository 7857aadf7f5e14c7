"""Facts, their version chains and tombstones (tables facts, tombstones).

Every statement is tenant- and user-scoped; the "visible" filter (not deleted) and the
"valid now" filter are written once here and reused.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg
from pgvector import Vector

from app.memory.model import ExistingFact, FactType, SourceKind, Status
from app.memory.webhooks import WebhookEvent
from app.store import audit, webhooks

# Statements select these FROM (or RETURNING from) `facts` unaliased: the hit counters
# are looked up in fact_hits by `facts.id` (kept apart, see migrations/0003).
_ROW_COLUMNS = """id, tenant_id, user_id, scope, type, predicate, value, statement, polarity,
    source_kind, source_trace_id, source_turn_id, source_evidence, source_writer, confidence,
    sensitivity, valid_from, valid_to, expires_at, status, version, supersedes, contested,
    observations, last_observed_at, feedback_up, feedback_down, weight,
    embedding_model, policy_version, archived_reason, created_at, updated_at, occurred_at, keys"""
# Every statement selecting these binds the tenant as $1: naming it in the subqueries too
# keeps the whole statement on one shard group on Citus (a router query; FOR UPDATE needs it).
FACT_COLUMNS = f"""{_ROW_COLUMNS},
    coalesce((SELECT h.hits FROM fact_hits h
              WHERE h.tenant_id = $1 AND h.fact_id = facts.id), 0) AS hits,
    (SELECT h.last_hit_at FROM fact_hits h
     WHERE h.tenant_id = $1 AND h.fact_id = facts.id) AS last_hit_at"""
# A fact just inserted has no hits; and Citus takes no subquery in an INSERT.
_NEW_FACT_COLUMNS = f"{_ROW_COLUMNS}, 0 AS hits, NULL::timestamptz AS last_hit_at"


async def lock_subject(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, user_id: str, scope: str, key: str
) -> None:
    """Serialize writes to one user+scope+predicate (or statement) until commit."""
    await conn.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
        subject_lock_key(tenant_id, user_id, scope, key),
    )


async def lock_subjects(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, subjects: list[tuple[str, str, str]]
) -> None:
    """`lock_subject` for many (user, scope, key) at once, in one order (sorted): two
    batches that share subjects wait for each other instead of deadlocking."""
    keys = sorted({f"{tenant_id}|{user}|{scope}|{key}" for user, scope, key in subjects})
    if keys:
        await conn.execute(
            """SELECT pg_advisory_xact_lock(hashtextextended(k, 0))
               FROM unnest($1::text[]) WITH ORDINALITY AS s(k, n) ORDER BY n""",
            keys,
        )


def pool_fact(row: asyncpg.Record) -> ExistingFact:
    """A conflict-pool row as the gate reads it."""
    return ExistingFact(
        id=row["id"],
        scope=row["scope"],
        type=FactType(row["type"]),
        predicate=row["predicate"],
        value=row["value"],
        statement=row["statement"],
        source_kind=SourceKind(row["source_kind"]),
        confidence=float(row["confidence"]),
        valid_from=row["valid_from"],
        status=Status(row["status"]),
        contested=row["contested"],
        similarity=float(row["similarity"]) if row["similarity"] is not None else None,
    )


# The conflict pool: active facts a candidate could conflict or merge with (same user and
# scope only). Named parameters: the statements run inside LOCK_POOL_FUNCTION.
_POOL_COLUMNS = """id, scope, type, predicate, value, statement, source_kind, confidence,
    valid_from, status, contested"""
POOL_BY_PREDICATE = f"""SELECT {_POOL_COLUMNS}, NULL::float8 AS similarity
    FROM facts
    WHERE tenant_id = p_tenant AND user_id = p_user AND scope = p_scope
      AND predicate = p_predicate AND status = 'active'
    ORDER BY valid_from DESC, id LIMIT p_limit"""
_SIMILARITY = """CASE WHEN p_embedding IS NOT NULL AND embedding_model = p_model
                AND vector_dims(embedding) = vector_dims(p_embedding)
           THEN {expr} END"""
POOL_FREE = f"""SELECT {_POOL_COLUMNS},
           {_SIMILARITY.format(expr="1 - (embedding <=> p_embedding)")} AS similarity
    FROM facts
    WHERE tenant_id = p_tenant AND user_id = p_user AND scope = p_scope AND type = p_type
      AND predicate IS NULL AND status = 'active'
    ORDER BY (statement_key = p_statement_key) DESC,
             {_SIMILARITY.format(expr="embedding <=> p_embedding")} NULLS LAST, id
    LIMIT p_limit"""
# The tombstones among a content's hashes (docs/lifecycle.md#tombstones), inside a function.
TOMBSTONED_IN_FUNCTION = """ARRAY(SELECT DISTINCT hash FROM tombstones
    WHERE tenant_id = p_tenant AND user_id = p_user AND scope = p_scope
      AND hash = ANY(p_hashes))"""

# Whether a forget-me of the user committed at or after the write began, inside a function
# (the fence: `users_store.fence_user`).
FORGOTTEN_IN_FUNCTION = """EXISTS (SELECT 1 FROM audit_events
    WHERE tenant_id = p_tenant AND action = 'forget_me'
      AND user_id = p_user AND created_at >= p_started)"""

# The fence, the subject lock, the tombstones of the content and the conflict pool in one
# round trip. plpgsql: each statement takes a new snapshot (read committed), so what is
# read after a lock is what the write that held it committed. The fence comes first, as
# `users_store.fence_user` takes it (the user's lock shared, then whether a forget-me
# committed since the write began), so the lock order stays user, then subject; a NULL
# `p_fence_key` skips it (the caller fenced already). The first row carries the fence's
# answer and the tombstones (id NULL), the pool follows in its order. Named by a hash of
# its body and installed by the migration runner on every run, as the recall function.
_LOCK_POOL_ARGS = """p_lock_key text, p_tenant uuid, p_user text, p_scope text, p_type text,
    p_predicate text, p_statement_key text, p_embedding vector, p_model text, p_limit int,
    p_hashes text[], p_fence_key text, p_started timestamptz"""
LOCK_POOL_COLUMNS = """forgotten boolean, tombstoned text[], id uuid, scope text, type text,
    predicate text, value jsonb, statement text, source_kind text, confidence real,
    valid_from timestamptz, status text, contested boolean, similarity double precision"""
_LOCK_POOL_BODY = f"""
DECLARE
  v_forgotten boolean := false;
BEGIN
  IF p_fence_key IS NOT NULL THEN
    PERFORM pg_advisory_xact_lock_shared(hashtextextended(p_fence_key, 0));
    v_forgotten := {FORGOTTEN_IN_FUNCTION};
    IF v_forgotten THEN
      RETURN QUERY SELECT true, NULL::text[], NULL::uuid, NULL::text, NULL::text, NULL::text,
        NULL::jsonb, NULL::text, NULL::text, NULL::real, NULL::timestamptz, NULL::text,
        NULL::boolean, NULL::float8;
      RETURN;
    END IF;
  END IF;
  PERFORM pg_advisory_xact_lock(hashtextextended(p_lock_key, 0));
  RETURN QUERY SELECT false, {TOMBSTONED_IN_FUNCTION}, NULL::uuid, NULL::text, NULL::text,
    NULL::text, NULL::jsonb, NULL::text, NULL::text, NULL::real, NULL::timestamptz,
    NULL::text, NULL::boolean, NULL::float8;
  IF p_predicate IS NOT NULL THEN
    RETURN QUERY SELECT false, NULL::text[], pool.* FROM ({POOL_BY_PREDICATE}) pool;
  ELSE
    RETURN QUERY SELECT false, NULL::text[], pool.* FROM ({POOL_FREE}) pool;
  END IF;
END"""
LOCK_POOL_FUNCTION = (
    "memgate_lock_pool_"
    + hashlib.sha256((_LOCK_POOL_ARGS + LOCK_POOL_COLUMNS + _LOCK_POOL_BODY).encode()).hexdigest()[
        :12
    ]
)
LOCK_POOL_FUNCTION_DDL = f"""
CREATE OR REPLACE FUNCTION {LOCK_POOL_FUNCTION}({_LOCK_POOL_ARGS})
RETURNS TABLE ({LOCK_POOL_COLUMNS})
LANGUAGE plpgsql VOLATILE AS $lock_pool$
#variable_conflict use_column
{_LOCK_POOL_BODY}
$lock_pool$;
REVOKE ALL ON FUNCTION {LOCK_POOL_FUNCTION}({_LOCK_POOL_ARGS}) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION {LOCK_POOL_FUNCTION}({_LOCK_POOL_ARGS}) TO memgate_app;
"""


def subject_lock_key(tenant_id: uuid.UUID, user_id: str, scope: str, key: str) -> str:
    return f"{tenant_id}|{user_id}|{scope}|{key}"


async def lock_conflict_pool(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    user_id: str,
    scope: str,
    subject: str,
    fact_type: str,
    predicate: str | None,
    statement_key: str,
    embedding: list[float] | None,
    embedding_model: str | None,
    hashes: list[str],
    limit: int = 20,
    *,
    fence: tuple[str, datetime] | None = None,
) -> tuple[bool, set[str], list[ExistingFact]]:
    """Take the subject lock (as `lock_subject`), then read the content's tombstones and the
    conflict pool, in one round trip: (forgotten, tombstoned hashes, active facts the
    candidate could conflict or merge with). `fence`: the user's lock key and the time the
    write began, to take `users_store.fence_user`'s fence first in the same round trip;
    forgotten is True when a forget-me committed since (nothing else is read then)."""
    fence_key, started = fence if fence is not None else (None, None)
    rows = await conn.fetch(
        f"SELECT * FROM {LOCK_POOL_FUNCTION}"
        "($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
        subject_lock_key(tenant_id, user_id, scope, subject),
        tenant_id,
        user_id,
        scope,
        fact_type,
        predicate,
        statement_key,
        embedding,
        embedding_model,
        limit,
        hashes,
        fence_key,
        started,
    )
    if rows and rows[0]["forgotten"]:
        return True, set(), []
    tombstoned = set(rows[0]["tombstoned"] or ()) if rows else set()
    return False, tombstoned, [pool_fact(r) for r in rows[1:]]


@dataclass
class NewFact:
    id: uuid.UUID
    tenant_id: uuid.UUID
    user_id: str
    scope: str
    type: str
    predicate: str | None
    value: Any
    value_key: str | None
    statement: str
    statement_key: str
    polarity: int
    source_kind: str
    source_trace_id: str | None
    source_turn_id: str | None
    source_evidence: str | None
    source_writer: uuid.UUID | None
    confidence: float
    sensitivity: str
    valid_from: datetime
    valid_to: datetime | None
    expires_at: datetime | None
    status: str
    version: int
    supersedes: uuid.UUID | None
    contested: bool
    embedding: list[float] | None
    embedding_model: str | None
    search_text: str
    policy_version: str
    now: datetime
    occurred_at: datetime | None = None
    keys: list[str] | None = None


async def insert_fact(
    conn: asyncpg.Connection,
    f: NewFact,
    event: audit.Event | None = None,
    hooks: list[WebhookEvent] | None = None,
    *,
    interaction: bool = False,
) -> asyncpg.Record:
    """Insert a fact; with `event`, its audit event, with `hooks`, the webhook
    deliveries they announce, and with `interaction`, the user's last interaction moved
    to `f.now` (as `users.upsert_state` with `interaction_at`), in the same statement (one
    round trip)."""
    insert = f"{_INSERT_FACT} RETURNING {_NEW_FACT_COLUMNS}"
    ctes: list[str] = []
    extra: list[Any] = []
    if event is not None:
        ctes.append(
            f"a AS (INSERT INTO audit_events ({audit.COLUMNS}) VALUES ({audit.placeholders(33)}))"
        )
        extra.extend(event.values())
    if hooks:
        ctes.append(f"w AS ({webhooks.deliveries_cte(2, 30, 33 + len(extra))})")
        extra.append(webhooks.event_rows(hooks, f.now))
    if interaction:
        ctes.append(f"i AS ({_INTERACTION})")
    if ctes:
        insert = f"WITH f AS ({insert}), {', '.join(ctes)} SELECT * FROM f"
    row = await conn.fetchrow(insert, *_fact_args(f), *extra)
    assert row is not None
    return row


# users.upsert_state with only `interaction_at` (= updated_at = $30, the write's time)
_INTERACTION = """INSERT INTO user_state (tenant_id, user_id, last_interaction_at, updated_at)
    VALUES ($2, $3, $30, $30)
    ON CONFLICT (tenant_id, user_id) DO UPDATE
    SET last_interaction_at = GREATEST(user_state.last_interaction_at,
                                       EXCLUDED.last_interaction_at),
        updated_at = EXCLUDED.updated_at"""


async def update_fact(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    fact_id: uuid.UUID,
    now: datetime,
    *,
    status: str | None = None,
    valid_to: datetime | None = None,
    confidence: float | None = None,
    contested: bool | None = None,
    observations_delta: int = 0,
) -> asyncpg.Record | None:
    # The hit counters come from a join after the UPDATE, not from subqueries in its
    # RETURNING: Citus refuses those (RLS puts a STABLE function in them). fact_hits is not
    # written here, so the join reads the same counters.
    return await conn.fetchrow(
        _UPDATE_FACT,
        tenant_id,
        fact_id,
        status,
        valid_to,
        confidence,
        contested,
        observations_delta,
        now,
    )


async def version_of(conn: asyncpg.Connection, tenant_id: uuid.UUID, fact_id: uuid.UUID) -> int:
    version = await conn.fetchval(
        "SELECT version FROM facts WHERE tenant_id = $1 AND id = $2", tenant_id, fact_id
    )
    return int(version or 0)


async def get_fact(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    user_id: str,
    fact_id: uuid.UUID,
    *,
    lock: bool = False,
) -> asyncpg.Record | None:
    """A visible fact of this user (deleted facts answer None, i.e. 404); `lock` holds
    the row until commit."""
    return await conn.fetchrow(
        f"""SELECT {FACT_COLUMNS} FROM facts
            WHERE tenant_id = $1 AND user_id = $2 AND id = $3 AND status <> 'deleted'"""
        + (" FOR UPDATE" if lock else ""),
        tenant_id,
        user_id,
        fact_id,
    )


async def apply_feedback(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    fact_id: uuid.UUID,
    useful: bool,
    now: datetime,
) -> asyncpg.Record | None:
    """Count one feedback; "not useful" also lowers the confidence (x0.8). None when the
    fact is gone (deleted between a read and this update)."""
    return await conn.fetchrow(
        """UPDATE facts SET
               confidence = CASE WHEN $3 THEN confidence ELSE confidence * 0.8 END,
               feedback_up = feedback_up + CASE WHEN $3 THEN 1 ELSE 0 END,
               feedback_down = feedback_down + CASE WHEN $3 THEN 0 ELSE 1 END,
               updated_at = $4
           WHERE tenant_id = $1 AND id = $2 AND status <> 'deleted'
           RETURNING confidence, feedback_up, feedback_down""",
        tenant_id,
        fact_id,
        useful,
        now,
    )


async def active_successor(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, user_id: str, fact_id: uuid.UUID
) -> uuid.UUID | None:
    """The active version of `fact_id`'s chain, if one is."""
    for version in reversed(await chain(conn, tenant_id, user_id, fact_id)):
        if version["status"] == "active":
            found: uuid.UUID = version["id"]
            return found
    return None


@dataclass
class FactFilter:
    scope: str | None = None
    type: str | None = None
    predicate: str | None = None
    status: str | None = None
    source_kind: str | None = None
    as_of: datetime | None = None
    allowed_scopes: list[str] | None = None  # None = every scope
    sensitivities: list[str] | None = None  # levels the key may see; None = all


async def list_facts(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    user_id: str,
    flt: FactFilter,
    after: tuple[datetime, uuid.UUID] | None,
    limit: int,
) -> list[asyncpg.Record]:
    """Newest first, keyset-paginated on (created_at, id).

    `as_of` answers "what was valid then" in validity time (docs/conflicts.md#time-and-conflicts):
    the interval
    [valid_from, valid_to) contains the instant; deleted and archived facts never answer.
    """
    return list(
        await conn.fetch(
            f"""SELECT {FACT_COLUMNS} FROM facts
                WHERE tenant_id = $1 AND user_id = $2 AND status <> 'deleted'
                  AND ($3::text IS NULL OR scope = $3)
                  AND ($4::text IS NULL OR type = $4)
                  AND ($5::text IS NULL OR predicate = $5)
                  AND ($6::text IS NULL OR status = $6)
                  AND ($7::text IS NULL OR source_kind = $7)
                  AND ($8::timestamptz IS NULL OR (valid_from <= $8
                        AND (valid_to IS NULL OR valid_to > $8)
                        AND status IN ('active', 'superseded')))
                  AND ($9::timestamptz IS NULL OR (created_at, id) < ($9, $10::uuid))
                  AND ($12::text[] IS NULL OR scope = ANY($12::text[]))
                  AND ($13::text[] IS NULL OR sensitivity = ANY($13::text[]))
                ORDER BY created_at DESC, id DESC
                LIMIT $11""",
            tenant_id,
            user_id,
            flt.scope,
            flt.type,
            flt.predicate,
            flt.status,
            flt.source_kind,
            flt.as_of,
            after[0] if after else None,
            after[1] if after else None,
            limit,
            flt.allowed_scopes,
            flt.sensitivities,
        )
    )


async def chain(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, user_id: str, fact_id: uuid.UUID
) -> list[asyncpg.Record]:
    """Every version linked to `fact_id` by `supersedes`, oldest first (deleted included)."""
    return list(
        await conn.fetch(
            f"""WITH RECURSIVE back(id) AS (
                    SELECT id FROM facts WHERE tenant_id = $1 AND user_id = $2 AND id = $3
                    UNION
                    SELECT f.supersedes FROM facts f JOIN back b ON f.id = b.id
                    WHERE f.tenant_id = $1 AND f.supersedes IS NOT NULL
                ), root AS (
                    SELECT b.id FROM back b JOIN facts f ON f.id = b.id
                    WHERE f.tenant_id = $1 AND (f.supersedes IS NULL
                        OR NOT EXISTS (SELECT 1 FROM facts p WHERE p.id = f.supersedes
                                       AND p.tenant_id = $1))
                    LIMIT 1
                ), fwd(id) AS (
                    SELECT id FROM root
                    UNION
                    SELECT f.id FROM facts f JOIN fwd ON f.supersedes = fwd.id
                    WHERE f.tenant_id = $1
                )
                SELECT {FACT_COLUMNS} FROM facts
                WHERE tenant_id = $1 AND user_id = $2 AND id IN (SELECT id FROM fwd)
                ORDER BY version, valid_from, created_at""",
            tenant_id,
            user_id,
            fact_id,
        )
    )


async def matching_tombstones(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, user_id: str, scope: str, hashes: list[str]
) -> set[str]:
    rows = await conn.fetch(
        """SELECT DISTINCT hash FROM tombstones
           WHERE tenant_id = $1 AND user_id = $2 AND scope = $3 AND hash = ANY($4::text[])""",
        tenant_id,
        user_id,
        scope,
        hashes,
    )
    return {r["hash"] for r in rows}


async def add_tombstones(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    user_id: str,
    scope: str,
    hashes: list[str],
    fact_id: uuid.UUID | None,
    source_refs: dict[str, Any],
    now: datetime,
) -> None:
    await conn.executemany(
        """INSERT INTO tombstones (id, tenant_id, user_id, scope, hash, fact_id, source_refs,
                                   created_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8)""",
        [(uuid.uuid4(), tenant_id, user_id, scope, h, fact_id, source_refs, now) for h in hashes],
    )


async def erase_chain(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, ids: list[uuid.UUID], now: datetime
) -> None:
    """Mark versions deleted and erase their text and embedding right away
    (docs/lifecycle.md#deletion)."""
    await conn.execute(
        """UPDATE facts SET status = 'deleted', statement = '', statement_key = '', value = NULL,
               value_key = NULL, source_evidence = NULL, embedding = NULL, search_text = '',
               keys = NULL, valid_to = coalesce(valid_to, $3), purged_at = $3, updated_at = $3
           WHERE tenant_id = $1 AND id = ANY($2::uuid[])""",
        tenant_id,
        ids,
        now,
    )


async def count_active(conn: asyncpg.Connection, tenant_id: uuid.UUID, user_id: str) -> int:
    return int(
        await conn.fetchval(
            """SELECT count(*) FROM facts
               WHERE tenant_id = $1 AND user_id = $2 AND status = 'active'""",
            tenant_id,
            user_id,
        )
    )


# ------------------------------------------------------------------ set-based batch writes
# A batch (facts:batch, an import chunk, an extraction batch) reads once what its items'
# single writes would each read, under the subject locks it already holds
# (`lock_subjects`), and writes its rows in a few statements (app.writer.write_many).
# Every statement binds the tenant as $1 (one shard group on Citus).


async def tombstoned_among(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    contents: list[tuple[str, str, list[str]]],
) -> set[tuple[str, str, str]]:
    """The tombstoned (user, scope, hash) among many contents' hashes, in one statement:
    `matching_tombstones` for each (user, scope, hashes)."""
    users: list[str] = []
    scopes: list[str] = []
    hashes: list[str] = []
    for user, scope, hs in contents:
        for h in hs:
            users.append(user)
            scopes.append(scope)
            hashes.append(h)
    if not hashes:
        return set()
    rows = await conn.fetch(
        """SELECT DISTINCT t.user_id, t.scope, t.hash
           FROM unnest($2::text[], $3::text[], $4::text[]) AS q(user_id, scope, hash)
           JOIN tombstones t ON t.tenant_id = $1 AND t.user_id = q.user_id
                             AND t.scope = q.scope AND t.hash = q.hash""",
        tenant_id,
        users,
        scopes,
        hashes,
    )
    return {(r["user_id"], r["scope"], r["hash"]) for r in rows}


@dataclass
class PoolFact:
    """A conflict-pool row of a batch read: the fact as the gate sees it, its version
    (a superseding write's chain continues from it) and, for a free statement's pool,
    whether its statement key is the candidate's and its cosine distance (None: no
    comparable vector), the two the single write's pool is ordered by."""

    fact: ExistingFact
    version: int
    key_match: bool = False
    distance: float | None = None


_BATCH_POOL_COLUMNS = f"{_POOL_COLUMNS}, version"


async def predicate_pools(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    subjects: list[tuple[str, str, str]],
) -> dict[tuple[str, str, str], list[PoolFact]]:
    """Every active fact of each (user, scope, predicate), in one statement: the pool
    `POOL_BY_PREDICATE` reads, unlimited (the caller orders and limits it per item, as
    the batch changes it)."""
    out: dict[tuple[str, str, str], list[PoolFact]] = {s: [] for s in subjects}
    if not subjects:
        return out
    rows = await conn.fetch(
        f"""SELECT q.user_id AS q_user, q.scope AS q_scope, q.predicate AS q_predicate,
                   {", ".join("f." + c.strip() for c in _BATCH_POOL_COLUMNS.split(","))},
                   NULL::float8 AS similarity
            FROM unnest($2::text[], $3::text[], $4::text[]) AS q(user_id, scope, predicate)
            JOIN facts f ON f.tenant_id = $1 AND f.user_id = q.user_id AND f.scope = q.scope
                        AND f.predicate = q.predicate AND f.status = 'active'""",
        tenant_id,
        [s[0] for s in subjects],
        [s[1] for s in subjects],
        [s[2] for s in subjects],
    )
    for r in rows:
        out[(r["q_user"], r["q_scope"], r["q_predicate"])].append(
            PoolFact(pool_fact(r), int(r["version"]))
        )
    return out


async def free_pools(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    items: list[tuple[str, str, str, str, list[float] | None, str | None]],
    limit: int = 20,
) -> list[list[PoolFact]]:
    """For each (user, scope, type, statement key, embedding, model), the pool of a free
    statement as `POOL_FREE` reads it (the same order and limit), in one statement."""
    if not items:
        return []
    rows = await conn.fetch(
        f"""SELECT q.n, p.*
            FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::vector[],
                        $7::text[]) WITH ORDINALITY
                 AS q(user_id, scope, type, statement_key, embedding, model, n)
            CROSS JOIN LATERAL (
                SELECT {_BATCH_POOL_COLUMNS}, statement_key = q.statement_key AS key_match,
                       d.distance, 1 - d.distance AS similarity
                FROM facts
                CROSS JOIN LATERAL (SELECT CASE WHEN q.embedding IS NOT NULL
                        AND embedding_model = q.model
                        AND vector_dims(embedding) = vector_dims(q.embedding)
                    THEN embedding <=> q.embedding END AS distance) d
                WHERE tenant_id = $1 AND user_id = q.user_id AND scope = q.scope
                  AND type = q.type AND predicate IS NULL AND status = 'active'
                ORDER BY (statement_key = q.statement_key) DESC, d.distance NULLS LAST, id
                LIMIT $8) p
            ORDER BY q.n""",
        tenant_id,
        [i[0] for i in items],
        [i[1] for i in items],
        [i[2] for i in items],
        [i[3] for i in items],
        # Vector objects: a list of lists would be read as a 2-d array
        [Vector(i[4]) if i[4] is not None else None for i in items],
        [i[5] for i in items],
        limit,
    )
    out: list[list[PoolFact]] = [[] for _ in items]
    for r in rows:
        out[int(r["n"]) - 1].append(
            PoolFact(
                pool_fact(r),
                int(r["version"]),
                key_match=bool(r["key_match"]),
                distance=float(r["distance"]) if r["distance"] is not None else None,
            )
        )
    return out


_INSERT_FACT = """INSERT INTO facts (id, tenant_id, user_id, scope, type, predicate, value,
        value_key, statement, statement_key, polarity, source_kind, source_trace_id,
        source_turn_id, source_evidence, source_writer, confidence, sensitivity, valid_from,
        valid_to, expires_at, status, version, supersedes, contested, embedding,
        embedding_model, search_text, policy_version, last_observed_at, created_at, updated_at,
        occurred_at, keys)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17,
            $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $30, $30,
            $31, $32)"""


def _fact_args(f: NewFact) -> tuple[Any, ...]:
    return (
        f.id,
        f.tenant_id,
        f.user_id,
        f.scope,
        f.type,
        f.predicate,
        f.value,
        f.value_key,
        f.statement,
        f.statement_key,
        f.polarity,
        f.source_kind,
        f.source_trace_id,
        f.source_turn_id,
        f.source_evidence,
        f.source_writer,
        f.confidence,
        f.sensitivity,
        f.valid_from,
        f.valid_to,
        f.expires_at,
        f.status,
        f.version,
        f.supersedes,
        f.contested,
        f.embedding,
        f.embedding_model,
        f.search_text,
        f.policy_version,
        f.now,
        f.occurred_at,
        f.keys or None,
    )


async def insert_facts(conn: asyncpg.Connection, facts: list[NewFact]) -> list[asyncpg.Record]:
    """Insert many facts in one round trip (pipelined), each row as `insert_fact` returns
    it, in order."""
    if not facts:
        return []
    return list(
        await conn.fetchmany(
            f"{_INSERT_FACT} RETURNING {_NEW_FACT_COLUMNS}", [_fact_args(f) for f in facts]
        )
    )


@dataclass
class FactChange:
    """One `update_fact` of a batch, at the time of the write that asked for it."""

    fact_id: uuid.UUID
    now: datetime
    status: str | None = None
    valid_to: datetime | None = None
    confidence: float | None = None
    contested: bool | None = None
    observations_delta: int = 0


_UPDATE_FACT = f"""WITH u AS (UPDATE facts SET
           status = coalesce($3, status),
           valid_to = coalesce($4, valid_to),
           confidence = coalesce($5, confidence),
           contested = coalesce($6, contested),
           observations = observations + $7,
           last_observed_at = CASE WHEN $7 > 0 THEN $8 ELSE last_observed_at END,
           updated_at = $8
        WHERE tenant_id = $1 AND id = $2 AND status <> 'deleted'
        RETURNING {_ROW_COLUMNS})
        SELECT u.*, coalesce(h.hits, 0) AS hits, h.last_hit_at
        FROM u LEFT JOIN fact_hits h ON h.tenant_id = $1 AND h.fact_id = u.id"""


async def update_facts(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, changes: list[FactChange]
) -> list[asyncpg.Record | None]:
    """`update_fact` for each change, in order, in one round trip (pipelined): the row
    after each change (None: the fact is gone)."""
    if not changes:
        return []
    rows = await conn.fetchmany(
        _UPDATE_FACT,
        [
            (
                tenant_id,
                ch.fact_id,
                ch.status,
                ch.valid_to,
                ch.confidence,
                ch.contested,
                ch.observations_delta,
                ch.now,
            )
            for ch in changes
        ],
    )
    # one row per change that found its fact, in order: align them by id
    out: list[asyncpg.Record | None] = []
    at = 0
    for ch in changes:
        if at < len(rows) and rows[at]["id"] == ch.fact_id:
            out.append(rows[at])
            at += 1
        else:
            out.append(None)
    return out
