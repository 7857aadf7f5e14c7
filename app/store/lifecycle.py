"""Lifecycle statements for the maintenance sweeps: expiry, decay, eviction, purge, merge.

Each statement works on one tenant and a bounded batch, and is safe to run from several
workers at once: rows are claimed with FOR UPDATE SKIP LOCKED, or the statement is a
single UPDATE whose result does not depend on who runs it.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import asyncpg
import orjson

from app.store.candidates import CANDIDATE_COLUMNS

# Sources that state rules rather than observations: evicted last, never decayed.
PROTECTED_SOURCES = ["explicit_instruction", "admin_policy", "system"]


async def promotable_candidates(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    min_observations: int,
    now: datetime,
    after: uuid.UUID | None,
    limit: int,
) -> list[asyncpg.Record]:
    """Pending candidates seen in enough distinct turns (sensitive ones wait for the user)."""
    return list(
        await conn.fetch(
            f"""SELECT {CANDIDATE_COLUMNS} FROM candidates
                WHERE tenant_id = $1 AND status = 'pending' AND reason IS NULL
                  AND observations >= $2 AND (expires_at IS NULL OR expires_at > $3)
                  AND ($4::uuid IS NULL OR id > $4)
                ORDER BY id LIMIT $5 FOR UPDATE SKIP LOCKED""",
            tenant_id,
            min_observations,
            now,
            after,
            limit,
        )
    )


async def expire_candidates(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, now: datetime, limit: int
) -> int:
    rows = await conn.fetch(
        """WITH picked AS (
               SELECT id FROM candidates
               WHERE tenant_id = $1 AND status = 'pending' AND expires_at <= $2
               ORDER BY expires_at LIMIT $3 FOR UPDATE SKIP LOCKED)
           UPDATE candidates c SET status = 'expired', updated_at = $2,
               embedding = NULL, embedding_model = NULL
           FROM picked WHERE c.tenant_id = $1 AND c.id = picked.id
           RETURNING c.id""",
        tenant_id,
        now,
        limit,
    )
    return len(rows)


async def archive_expired_facts(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, now: datetime, policy_version: str, limit: int
) -> int:
    """TTL expiry: archived with reason 'expired', no tombstone (docs/lifecycle.md#tombstones),
    audited."""
    rows = await conn.fetch(
        """WITH picked AS (
               SELECT id FROM facts
               WHERE tenant_id = $1 AND status = 'active' AND expires_at <= $2
               ORDER BY expires_at LIMIT $4 FOR UPDATE SKIP LOCKED),
           archived AS (
               UPDATE facts f SET status = 'archived', archived_reason = 'expired', updated_at = $2
               FROM picked WHERE f.tenant_id = $1 AND f.id = picked.id
               RETURNING f.id, f.user_id, f.scope, f.source_kind)
           INSERT INTO audit_events (tenant_id, user_id, actor_role, action, fact_id,
                                     source_kind, policy_version, detail, created_at)
           SELECT $1, user_id, 'system', 'expire', id, source_kind, $3,
                  jsonb_build_object('scope', scope), $2 FROM archived
           RETURNING fact_id""",
        tenant_id,
        now,
        policy_version,
        limit,
    )
    return len(rows)


async def active_fact_ids(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, after: uuid.UUID | None, limit: int
) -> list[uuid.UUID]:
    rows = await conn.fetch(
        """SELECT id FROM facts WHERE tenant_id = $1 AND status = 'active'
             AND ($2::uuid IS NULL OR id > $2) ORDER BY id LIMIT $3""",
        tenant_id,
        after,
        limit,
    )
    return [r["id"] for r in rows]


async def decay_weights(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    ids: list[uuid.UUID],
    now: datetime,
    half_life_days: float,
    keep_floor: float,
) -> int:
    """weight = max(keep_floor, 0.5^(days since last observed / half-life)).

    Only the weight moves: nothing is archived or deleted here. Rules (procedural facts,
    admin and system sources) do not fade. Rows already at their weight are not written.
    """
    rows = await conn.fetch(
        """WITH w AS (
               SELECT id, GREATEST($5::float8, power(0.5::float8,
                   GREATEST(0, extract(epoch FROM ($3::timestamptz - last_observed_at)))
                   / 86400.0 / $4::float8)) AS weight
               FROM facts
               WHERE tenant_id = $1 AND id = ANY($2::uuid[]) AND status = 'active'
                 AND type <> 'procedural' AND source_kind NOT IN ('admin_policy', 'system'))
           UPDATE facts f SET weight = w.weight FROM w
           WHERE f.tenant_id = $1 AND f.id = w.id AND abs(f.weight - w.weight) > 0.001
           RETURNING f.id""",
        tenant_id,
        ids,
        now,
        half_life_days,
        keep_floor,
    )
    return len(rows)


async def users_over_capacity(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, max_items: int, limit: int
) -> list[tuple[str, int]]:
    rows = await conn.fetch(
        """SELECT user_id, count(*) AS n FROM facts WHERE tenant_id = $1 AND status = 'active'
           GROUP BY user_id HAVING count(*) > $2 ORDER BY count(*) DESC LIMIT $3""",
        tenant_id,
        max_items,
        limit,
    )
    return [(r["user_id"], int(r["n"])) for r in rows]


async def try_lock_user(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, user_id: str, purpose: str
) -> bool:
    """A transaction-scoped lock on one user's pool for one sweep; False when taken."""
    return bool(
        await conn.fetchval(
            "SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0))",
            f"{tenant_id}|{user_id}|{purpose}",
        )
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


async def evict_least_useful(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    user_id: str,
    n: int,
    now: datetime,
    policy_version: str,
) -> int:
    """Archive the `n` least useful active facts: rules last, then lowest weight×confidence."""
    rows = await conn.fetch(
        """WITH victims AS (
               SELECT id FROM facts
               WHERE tenant_id = $1 AND user_id = $2 AND status = 'active'
               ORDER BY (source_kind = ANY($6::text[]) OR type = 'procedural'),
                        weight * confidence, last_observed_at, id
               LIMIT $3 FOR UPDATE),
           archived AS (
               UPDATE facts f SET status = 'archived', archived_reason = 'evicted', updated_at = $4
               FROM victims WHERE f.tenant_id = $1 AND f.id = victims.id
               RETURNING f.id, f.scope, f.source_kind)
           INSERT INTO audit_events (tenant_id, user_id, actor_role, action, fact_id,
                                     source_kind, policy_version, detail, created_at)
           SELECT $1, $2, 'system', 'evict', id, source_kind, $5,
                  jsonb_build_object('scope', scope), $4 FROM archived
           RETURNING fact_id""",
        tenant_id,
        user_id,
        n,
        now,
        policy_version,
        PROTECTED_SOURCES,
    )
    return len(rows)


async def count_unscrubbed(conn: asyncpg.Connection, tenant_id: uuid.UUID) -> int:
    """Deleted facts whose copies the purge has not reached yet (a purge job's `total`)."""
    return int(
        await conn.fetchval(
            """SELECT count(*) FROM facts
               WHERE tenant_id = $1 AND status = 'deleted' AND scrubbed_at IS NULL""",
            tenant_id,
        )
    )


async def unscrubbed_deleted(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, limit: int
) -> list[uuid.UUID]:
    rows = await conn.fetch(
        """SELECT id FROM facts WHERE tenant_id = $1 AND status = 'deleted' AND scrubbed_at IS NULL
           ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED""",
        tenant_id,
        limit,
    )
    return [r["id"] for r in rows]


async def erase_facts(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, ids: list[uuid.UUID], now: datetime
) -> None:
    """Text and embedding gone from the facts rows (a no-op for rows deletion already erased)."""
    await conn.execute(
        """UPDATE facts SET statement = '', statement_key = '', value = NULL, value_key = NULL,
               source_evidence = NULL, embedding = NULL, search_text = '', keys = NULL,
               purged_at = coalesce(purged_at, $3), scrubbed_at = $3
           WHERE tenant_id = $1 AND id = ANY($2::uuid[])""",
        tenant_id,
        ids,
        now,
    )


async def erase_candidates_of(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, ids: list[uuid.UUID], now: datetime
) -> list[uuid.UUID]:
    """Candidates promoted into deleted facts keep no copy of their words."""
    rows = await conn.fetch(
        """UPDATE candidates SET statement = '', value = NULL, evidence = NULL, keys = NULL,
               match_key = 'erased:' || id::text, status = 'deleted', updated_at = $3,
               embedding = NULL, embedding_model = NULL
           WHERE tenant_id = $1 AND fact_id = ANY($2::uuid[])
           RETURNING id""",
        tenant_id,
        ids,
        now,
    )
    return [r["id"] for r in rows]


async def erase_audit_text(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    fact_ids: list[uuid.UUID],
    candidate_ids: list[uuid.UUID],
) -> None:
    await conn.execute(
        """UPDATE audit_events SET detail = (detail - 'statement' - 'value')
                                   || '{"erased": true}'::jsonb
           WHERE tenant_id = $1
             AND (fact_id = ANY($2::uuid[]) OR candidate_id = ANY($3::uuid[]))
             AND (detail ? 'statement' OR detail ? 'value')""",
        tenant_id,
        fact_ids,
        candidate_ids,
    )


async def recall_logs_with(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, ids: list[uuid.UUID]
) -> list[asyncpg.Record]:
    return list(
        await conn.fetch(
            """SELECT id, fact_ids, detail FROM recall_log
               WHERE tenant_id = $1 AND fact_ids && $2::uuid[] FOR UPDATE""",
            tenant_id,
            ids,
        )
    )


async def update_recall_log(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    log_id: int,
    fact_ids: list[uuid.UUID],
    detail: Any,
) -> None:
    if fact_ids:
        await conn.execute(
            "UPDATE recall_log SET fact_ids = $3, detail = $4 WHERE tenant_id = $1 AND id = $2",
            tenant_id,
            log_id,
            fact_ids,
            detail,
        )
    else:  # it only ever named facts that are gone
        await conn.execute(
            "DELETE FROM recall_log WHERE tenant_id = $1 AND id = $2", tenant_id, log_id
        )


async def idempotency_records_with(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, ids: list[uuid.UUID]
) -> list[dict[str, Any]]:
    """Stored answers (24 h) that quote one of these facts, their text parsed."""
    rows = await conn.fetch(
        """SELECT principal_id, key, method, path, response FROM idempotency
           WHERE tenant_id = $1 AND response IS NOT NULL
             AND response::text LIKE ANY($2::text[]) FOR UPDATE""",
        tenant_id,
        [f"%{i}%" for i in ids],
    )
    out = []
    for r in rows:
        text = r["response"]
        out.append({**dict(r), "response": orjson.loads(text) if isinstance(text, str) else text})
    return out


async def update_idempotency_response(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, record: dict[str, Any], response: Any
) -> None:
    """Store the scrubbed answer back as text (a replay sends it as is)."""
    await conn.execute(
        """UPDATE idempotency SET response = $6
           WHERE tenant_id = $1 AND principal_id = $2 AND key = $3 AND method = $4
             AND path = $5""",
        tenant_id,
        record["principal_id"],
        record["key"],
        record["method"],
        record["path"],
        orjson.dumps(response).decode(),
    )


async def duplicate_statement_groups(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, limit: int
) -> list[asyncpg.Record]:
    """Active free statements of one user+scope+type+polarity sharing a normalized text."""
    return list(
        await conn.fetch(
            """SELECT user_id, scope, type, statement_key, polarity FROM facts
               WHERE tenant_id = $1 AND status = 'active' AND predicate IS NULL
                 AND statement_key <> ''
               GROUP BY user_id, scope, type, statement_key, polarity
               HAVING count(*) > 1 LIMIT $2""",
            tenant_id,
            limit,
        )
    )


async def lock_duplicates(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, group: asyncpg.Record
) -> list[asyncpg.Record]:
    return list(
        await conn.fetch(
            """SELECT id, observations, confidence, last_observed_at FROM facts
               WHERE tenant_id = $1 AND user_id = $2 AND scope = $3 AND type = $4
                 AND statement_key = $5 AND polarity = $6 AND predicate IS NULL
                 AND status = 'active'
               ORDER BY created_at, id FOR UPDATE""",
            tenant_id,
            group["user_id"],
            group["scope"],
            group["type"],
            group["statement_key"],
            group["polarity"],
        )
    )


async def merge_into(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    keep: asyncpg.Record,
    others: list[asyncpg.Record],
    now: datetime,
) -> None:
    """The oldest fact absorbs the others' observations; the others are archived 'merged'."""
    await conn.execute(
        """UPDATE facts SET observations = observations + $3,
               confidence = GREATEST(confidence, $4),
               last_observed_at = GREATEST(last_observed_at, $5), updated_at = $6
           WHERE tenant_id = $1 AND id = $2""",
        tenant_id,
        keep["id"],
        sum(int(r["observations"]) for r in others),
        max(float(r["confidence"]) for r in others),
        max(r["last_observed_at"] for r in others),
        now,
    )
    await conn.execute(
        """UPDATE facts SET status = 'archived', archived_reason = 'merged', updated_at = $3
           WHERE tenant_id = $1 AND id = ANY($2::uuid[])""",
        tenant_id,
        [r["id"] for r in others],
        now,
    )
