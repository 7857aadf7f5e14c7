"""Operators' SQL: batch cleanup by filter and the tenant's health figures (docs/api.md#endpoints,
docs/architecture.md#observability).

The cleanup filter is one WHERE clause per table, written once, used by the dry-run count
and by every batch of the real run, so both always mean the same rows. Each batch locks
its rows (ORDER BY id, FOR UPDATE) and commits on its own: a 100k-row cleanup is many
short transactions, never one long lock. Rows a batch handled no longer match (deleted,
archived or expired), so a run interrupted halfway simply continues where it stopped.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import asyncpg

from app.memory.normalize import tombstone_hashes

# $1 tenant, $2 source_kind, $3 status, $4 type, $5 created_before, $6 created_after,
# $7 max_confidence, $8 user_id, $9 scope, $10 archive (bool), $11 scopes the caller may
# use (NULL: any), $12 sensitivities under the caller's ceiling (NULL: any)
_FACT_MATCH = """tenant_id = $1 AND status <> 'deleted'
    AND ($2::text IS NULL OR source_kind = $2)
    AND ($3::text IS NULL OR status = $3)
    AND ($4::text IS NULL OR type = $4)
    AND ($5::timestamptz IS NULL OR created_at < $5)
    AND ($6::timestamptz IS NULL OR created_at >= $6)
    AND ($7::float8 IS NULL OR confidence <= $7)
    AND ($8::text IS NULL OR user_id = $8)
    AND ($9::text IS NULL OR scope = $9)
    AND (NOT $10::boolean OR status <> 'archived')
    AND ($11::text[] IS NULL OR scope = ANY($11))
    AND ($12::text[] IS NULL OR sensitivity = ANY($12))"""

# Candidates: archiving means expiring a pending one; deleting applies to any status.
_CANDIDATE_MATCH = """tenant_id = $1 AND status <> 'deleted'
    AND ($2::text IS NULL OR source_kind = $2)
    AND ($3::text IS NULL OR status = $3)
    AND ($4::text IS NULL OR type = $4)
    AND ($5::timestamptz IS NULL OR created_at < $5)
    AND ($6::timestamptz IS NULL OR created_at >= $6)
    AND ($7::float8 IS NULL OR confidence <= $7)
    AND ($8::text IS NULL OR user_id = $8)
    AND ($9::text IS NULL OR scope = $9)
    AND (NOT $10::boolean OR status = 'pending')
    AND ($11::text[] IS NULL OR scope = ANY($11))
    AND ($12::text[] IS NULL OR sensitivity = ANY($12))"""


@dataclass(frozen=True)
class CleanupFilter:
    source_kind: str | None = None
    status: str | None = None
    type: str | None = None
    created_before: datetime | None = None
    created_after: datetime | None = None
    max_confidence: float | None = None
    user_id: str | None = None
    scope: str | None = None
    candidate: bool = False
    # What the caller may touch (its key's scopes and sensitivity ceiling); None: all.
    allowed_scopes: list[str] | None = None
    sensitivities: list[str] | None = None

    def args(self, tenant_id: uuid.UUID, archive: bool) -> tuple[Any, ...]:
        return (
            tenant_id,
            self.source_kind,
            self.status,
            self.type,
            self.created_before,
            self.created_after,
            self.max_confidence,
            self.user_id,
            self.scope,
            archive,
            self.allowed_scopes,
            self.sensitivities,
        )

    @property
    def table_match(self) -> tuple[str, str]:
        return ("candidates", _CANDIDATE_MATCH) if self.candidate else ("facts", _FACT_MATCH)


async def count_matches(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, flt: CleanupFilter, archive: bool
) -> dict[str, int]:
    """Matching rows per user (the dry run)."""
    table, match = flt.table_match
    rows = await conn.fetch(
        f"SELECT user_id, count(*) AS n FROM {table} WHERE {match} GROUP BY user_id",
        *flt.args(tenant_id, archive),
    )
    return {r["user_id"]: int(r["n"]) for r in sorted(rows, key=lambda r: r["user_id"])}


async def lock_batch(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    flt: CleanupFilter,
    archive: bool,
    limit: int,
) -> list[asyncpg.Record]:
    table, match = flt.table_match
    columns = "id, user_id, scope, predicate, value, statement, status, source_kind" + (
        "" if flt.candidate else ", source_trace_id"
    )
    return list(
        await conn.fetch(
            f"""SELECT {columns} FROM {table} WHERE {match}
                ORDER BY id LIMIT $13 FOR UPDATE""",
            *flt.args(tenant_id, archive),
            limit,
        )
    )


def _tombstone_rows(
    tenant_id: uuid.UUID, rows: list[asyncpg.Record], now: datetime, key: str
) -> list[tuple[Any, ...]]:
    out = []
    for r in rows:
        refs = {key: [str(r["id"])], "source_kinds": [r["source_kind"]], "reason": "cleanup"}
        fact_id = None if key == "candidate_ids" else r["id"]
        for h in sorted(
            set(tombstone_hashes(r["scope"], r["predicate"], r["value"], r["statement"]))
        ):
            out.append((uuid.uuid4(), tenant_id, r["user_id"], r["scope"], h, fact_id, refs, now))
    return out


async def add_tombstones(conn: asyncpg.Connection, rows: list[tuple[Any, ...]]) -> None:
    await conn.executemany(
        """INSERT INTO tombstones (id, tenant_id, user_id, scope, hash, fact_id, source_refs,
                                   created_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8)""",
        rows,
    )


async def delete_facts(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, rows: list[asyncpg.Record], now: datetime
) -> None:
    """Delete semantics (docs/lifecycle.md#deletion): tombstone the content, erase text and
    embedding now.

    Only the matched rows: an operator pruning old superseded versions must not erase the
    active version that followed them (a user's DELETE erases the whole chain instead).
    """
    from app.store.facts import erase_chain

    await add_tombstones(conn, _tombstone_rows(tenant_id, rows, now, "fact_ids"))
    await erase_chain(conn, tenant_id, [r["id"] for r in rows], now)


async def archive_facts(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, ids: list[uuid.UUID], now: datetime
) -> None:
    """Archive without tombstone (docs/lifecycle.md#tombstones): out of recall, kept, may be learned
    again."""
    await conn.execute(
        """UPDATE facts SET status = 'archived', archived_reason = 'cleanup', updated_at = $3
           WHERE tenant_id = $1 AND id = ANY($2::uuid[])""",
        tenant_id,
        ids,
        now,
    )


async def delete_candidates(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, rows: list[asyncpg.Record], now: datetime
) -> None:
    """Erase candidates; pending ones are tombstoned so extraction does not offer them
    again (a promoted one's content lives on in its fact, which must keep merging)."""
    pending = [r for r in rows if r["status"] == "pending"]
    await add_tombstones(conn, _tombstone_rows(tenant_id, pending, now, "candidate_ids"))
    await conn.execute(
        """UPDATE candidates SET status = 'deleted', statement = '', value = NULL,
               evidence = NULL, keys = NULL, match_key = 'deleted:' || id::text, updated_at = $3,
               embedding = NULL, embedding_model = NULL
           WHERE tenant_id = $1 AND id = ANY($2::uuid[])""",
        tenant_id,
        [r["id"] for r in rows],
        now,
    )


async def expire_candidates(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, ids: list[uuid.UUID], now: datetime
) -> None:
    await conn.execute(
        """UPDATE candidates SET status = 'expired', updated_at = $3,
               embedding = NULL, embedding_model = NULL
           WHERE tenant_id = $1 AND id = ANY($2::uuid[])""",
        tenant_id,
        ids,
        now,
    )


async def audit_batch(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    rows: list[asyncpg.Record],
    *,
    action: str,
    candidate: bool,
    actor: uuid.UUID | None,
    actor_role: str | None,
    now: datetime,
) -> None:
    """One audit event per row, so each user's trail shows the cleanup that touched it."""
    await conn.executemany(
        """INSERT INTO audit_events (tenant_id, user_id, actor, actor_role, action, decision,
               fact_id, candidate_id, source_kind, detail, created_at)
           VALUES ($1, $2, $3, $4, 'cleanup', $5, $6, $7, $8, $9, $10)""",
        [
            (
                tenant_id,
                r["user_id"],
                actor,
                actor_role,
                action,
                None if candidate else r["id"],
                r["id"] if candidate else None,
                r["source_kind"],
                {"scope": r["scope"], "previous_status": r["status"]},
                now,
            )
            for r in rows
        ],
    )


# --------------------------------------------------------------------------------- stats


async def fact_counts(pool: asyncpg.Pool) -> list[asyncpg.Record]:
    """(tenant_id, status, n, last_day) of every tenant, for /metrics: a SECURITY DEFINER
    function, so no tenant transaction (aggregates only)."""
    async with pool.acquire(timeout=2) as conn:
        return list(await conn.fetch("SELECT * FROM memgate_fact_counts()"))


async def stats(conn: asyncpg.Connection, tenant_id: uuid.UUID, now: datetime) -> dict[str, Any]:
    """Per-tenant health figures (docs/architecture.md#observability): aggregates only, never
    content."""
    day, week = now - timedelta(days=1), now - timedelta(days=7)
    facts = await conn.fetch(
        """SELECT status, type, source_kind, count(*) AS n FROM facts WHERE tenant_id = $1
           GROUP BY status, type, source_kind""",
        tenant_id,
    )
    by_status: dict[str, int] = {}
    by_type: dict[str, int] = {}
    by_source: dict[str, int] = {}
    for r in facts:
        n = int(r["n"])
        by_status[r["status"]] = by_status.get(r["status"], 0) + n
        if r["status"] == "active":
            by_type[r["type"]] = by_type.get(r["type"], 0) + n
            by_source[r["source_kind"]] = by_source.get(r["source_kind"], 0) + n
    growth = await conn.fetchrow(
        """SELECT count(*) FILTER (WHERE created_at > $2) AS day,
                  count(*) FILTER (WHERE created_at > $3) AS week,
                  count(DISTINCT user_id) FILTER (WHERE status = 'active') AS users,
                  coalesce(sum(feedback_up), 0) AS up, coalesce(sum(feedback_down), 0) AS down
           FROM facts WHERE tenant_id = $1""",
        tenant_id,
        day,
        week,
    )
    archived = await conn.fetch(
        """SELECT coalesce(archived_reason, 'unknown') AS reason, count(*) AS n FROM facts
           WHERE tenant_id = $1 AND status = 'archived' GROUP BY 1""",
        tenant_id,
    )
    gate = await conn.fetch(
        """SELECT decision, coalesce(reason, '') AS reason, count(*) AS n FROM audit_events
           WHERE tenant_id = $1 AND action IN ('write', 'update', 'reject')
             AND decision IS NOT NULL
           GROUP BY 1, 2""",
        tenant_id,
    )
    cands = await conn.fetch(
        """SELECT status, count(*) AS n,
                  count(*) FILTER (WHERE updated_at > $2) AS week
           FROM candidates WHERE tenant_id = $1 GROUP BY status""",
        tenant_id,
        week,
    )
    recall = await conn.fetchrow(
        """SELECT count(*) AS n, count(*) FILTER (WHERE cardinality(fact_ids) > 0) AS hits,
                  coalesce(sum(tokens), 0) AS tokens,
                  coalesce(sum(cardinality(fact_ids)), 0) AS facts,
                  count(*) FILTER (WHERE created_at > $2) AS day
           FROM recall_log WHERE tenant_id = $1""",
        tenant_id,
        day,
    )
    tiers = await conn.fetch(
        """SELECT coalesce(tier, 'unknown') AS tier, count(*) AS n FROM recall_log
           WHERE tenant_id = $1 GROUP BY 1""",
        tenant_id,
    )
    assert growth is not None and recall is not None
    by_decision: dict[str, int] = {}
    by_reason: dict[str, int] = {}
    for r in gate:
        by_decision[r["decision"]] = by_decision.get(r["decision"], 0) + int(r["n"])
        if r["reason"]:
            by_reason[r["reason"]] = by_reason.get(r["reason"], 0) + int(r["n"])
    cand_status = {r["status"]: int(r["n"]) for r in cands}
    recalls = int(recall["n"])
    return {
        "facts": {
            "by_status": by_status,
            "active_by_type": by_type,
            "active_by_source_kind": by_source,
            "users": int(growth["users"]),
        },
        "growth": {"last_day": int(growth["day"]), "last_week": int(growth["week"])},
        "gate": {"by_decision": by_decision, "by_reason": by_reason},
        "candidates": {"by_status": cand_status},
        "promotions": {
            "total": cand_status.get("promoted", 0),
            "last_week": sum(int(r["week"]) for r in cands if r["status"] == "promoted"),
        },
        "expiry": {
            "candidates_expired": cand_status.get("expired", 0),
            "facts_archived_by_reason": {r["reason"]: int(r["n"]) for r in archived},
        },
        "recall": {
            "total": recalls,
            "last_day": int(recall["day"]),
            "with_facts": int(recall["hits"]),
            "hit_rate": round(int(recall["hits"]) / recalls, 4) if recalls else None,
            "injected_facts": int(recall["facts"]),
            "injected_tokens": int(recall["tokens"]),
            "avg_tokens": round(int(recall["tokens"]) / recalls, 2) if recalls else None,
            "by_tier": {r["tier"]: int(r["n"]) for r in tiers},
        },
        "feedback": {"useful": int(growth["up"]), "not_useful": int(growth["down"])},
    }
