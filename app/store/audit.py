"""Audit events: every write, reject, update, delete and cleanup (SPEC §11).

`detail` must already be redacted: callers pass redacted statements, never raw content
that the gate refused.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import asyncpg

from app import clock


async def record(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    action: str,
    *,
    actor: uuid.UUID | None = None,
    actor_role: str | None = None,
    user_id: str | None = None,
    decision: str | None = None,
    reason: str | None = None,
    fact_id: uuid.UUID | None = None,
    candidate_id: uuid.UUID | None = None,
    source_kind: str | None = None,
    trace_id: str | None = None,
    policy_version: str | None = None,
    detail: dict[str, Any] | None = None,
    at: datetime | None = None,
) -> None:
    await conn.execute(
        """INSERT INTO audit_events (tenant_id, user_id, actor, actor_role, action, decision,
               reason, fact_id, candidate_id, source_kind, trace_id, policy_version, detail,
               created_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)""",
        tenant_id,
        user_id,
        actor,
        actor_role,
        action,
        decision,
        reason,
        fact_id,
        candidate_id,
        source_kind,
        trace_id,
        policy_version,
        detail or {},
        at or clock.now(),
    )


async def list_for_user(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, user_id: str, after: int | None, limit: int
) -> list[asyncpg.Record]:
    return list(
        await conn.fetch(
            """SELECT * FROM audit_events
               WHERE tenant_id = $1 AND user_id = $2 AND ($3::bigint IS NULL OR id > $3)
               ORDER BY id LIMIT $4""",
            tenant_id,
            user_id,
            after,
            limit,
        )
    )


def audit_json(row: asyncpg.Record) -> dict[str, Any]:
    return {
        "id": row["id"],
        "action": row["action"],
        "decision": row["decision"],
        "reason": row["reason"],
        "user_id": row["user_id"],
        "actor": str(row["actor"]) if row["actor"] else None,
        "actor_role": row["actor_role"],
        "fact_id": str(row["fact_id"]) if row["fact_id"] else None,
        "candidate_id": str(row["candidate_id"]) if row["candidate_id"] else None,
        "source_kind": row["source_kind"],
        "trace_id": row["trace_id"],
        "policy_version": row["policy_version"],
        "detail": row["detail"],
        "created_at": row["created_at"].isoformat(),
    }
