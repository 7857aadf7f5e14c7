"""Audit events: every write, reject, update, delete and cleanup
(docs/architecture.md#observability).

`detail` must already be redacted: callers pass redacted statements, never raw content
that the gate refused.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from app import clock


@dataclass(frozen=True)
class Event:
    """One audit event, ready to insert (`detail` already redacted)."""

    tenant_id: uuid.UUID
    action: str
    actor: uuid.UUID | None = None
    actor_role: str | None = None
    user_id: str | None = None
    decision: str | None = None
    reason: str | None = None
    fact_id: uuid.UUID | None = None
    candidate_id: uuid.UUID | None = None
    source_kind: str | None = None
    trace_id: str | None = None
    policy_version: str | None = None
    detail: dict[str, Any] | None = None
    at: datetime | None = None
    scope: str | None = None
    sensitivity: str | None = None

    def values(self) -> tuple[Any, ...]:
        """The INSERT's values, in `COLUMNS` order. `scope` (default: the detail's) and
        `sensitivity` say who may read it: a key sees an event only as it would see the
        fact the event is about."""
        d = self.detail
        scope = self.scope or (str(d["scope"]) if d and d.get("scope") else None)
        return (
            self.tenant_id,
            self.user_id,
            self.actor,
            self.actor_role,
            self.action,
            self.decision,
            self.reason,
            self.fact_id,
            self.candidate_id,
            self.source_kind,
            self.trace_id,
            self.policy_version,
            d or {},
            self.at or clock.now(),
            scope,
            self.sensitivity,
        )


COLUMNS = """tenant_id, user_id, actor, actor_role, action, decision, reason, fact_id,
    candidate_id, source_kind, trace_id, policy_version, detail, created_at, scope, sensitivity"""


def placeholders(first: int) -> str:
    """`$first, ..., $first+15`: an event's values inside a larger statement."""
    return ", ".join(f"${first + i}" for i in range(16))


async def insert(conn: asyncpg.Connection, event: Event) -> None:
    await conn.execute(
        f"INSERT INTO audit_events ({COLUMNS}) VALUES ({placeholders(1)})", *event.values()
    )


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
    scope: str | None = None,
    sensitivity: str | None = None,
) -> None:
    """One event (see `Event`)."""
    await insert(
        conn,
        Event(
            tenant_id,
            action,
            actor=actor,
            actor_role=actor_role,
            user_id=user_id,
            decision=decision,
            reason=reason,
            fact_id=fact_id,
            candidate_id=candidate_id,
            source_kind=source_kind,
            trace_id=trace_id,
            policy_version=policy_version,
            detail=detail,
            at=at,
            scope=scope,
            sensitivity=sensitivity,
        ),
    )


async def list_for_user(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    user_id: str,
    after: int | None,
    limit: int,
    *,
    scopes: list[str] | None = None,
    sensitivities: list[str] | None = None,
) -> list[asyncpg.Record]:
    """The user's events that a key of these scopes and sensitivities may read (None: all).
    An event's scope and sensitivity are its own, else those of the fact or candidate it
    names (the fact's sensitivity first: the gate may have raised it), else the scope in
    its detail, else global / normal."""
    return list(
        await conn.fetch(
            """SELECT a.* FROM audit_events a
               LEFT JOIN facts f ON f.tenant_id = a.tenant_id AND f.id = a.fact_id
               LEFT JOIN candidates c ON c.tenant_id = a.tenant_id AND c.id = a.candidate_id
               WHERE a.tenant_id = $1 AND a.user_id = $2 AND ($3::bigint IS NULL OR a.id > $3)
                 AND ($5::text[] IS NULL OR coalesce(a.scope, f.scope, c.scope,
                                                     a.detail->>'scope', 'global') = ANY($5))
                 AND ($6::text[] IS NULL OR coalesce(f.sensitivity, a.sensitivity,
                                                     c.sensitivity, 'normal') = ANY($6))
               ORDER BY a.id LIMIT $4""",
            tenant_id,
            user_id,
            after,
            limit,
            scopes,
            sensitivities,
        )
    )


async def insert_many(conn: asyncpg.Connection, events: list[Event]) -> None:
    """Insert events in one round trip (pipelined), in order: their ids follow it."""
    if events:
        await conn.executemany(
            f"INSERT INTO audit_events ({COLUMNS}) VALUES ({placeholders(1)})",
            [e.values() for e in events],
        )
