"""Webhook endpoints and their deliveries (tables webhook_endpoints, webhook_deliveries;
docs/webhooks.md).

The outbox insert (`emit`, or `DELIVERIES_CTE` folded into a statement the path already
runs) writes one delivery per endpoint subscribed to the event, in the transaction of what
the event announces: a write that rolls back announces nothing. With no endpoint it costs
an index probe, no round trip of its own on the write path.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import asyncpg

from app.memory.webhooks import WebhookEvent


def deliveries_cte(tenant: int, now: int, events: int) -> str:
    """An INSERT of the deliveries of the events in parameter `$events` (a jsonb array of
    `WebhookEvent.row`), for a WITH clause: `$tenant` is the tenant, `$now` the time."""
    # The delivery id is md5(seed, endpoint) rather than gen_random_uuid(): a volatile
    # function keeps Citus from pushing this INSERT … SELECT down to the tenant's shard, and
    # its fallback (a COPY through the coordinator) is refused under row-level security.
    return f"""INSERT INTO webhook_deliveries (tenant_id, id, endpoint_id, event_type, user_id,
                   payload, next_attempt_at, created_at, updated_at)
               SELECT e.tenant_id, md5(m.seed::text || e.id::text)::uuid, e.id, m.type,
                      m.user_id, m.payload, ${now}, ${now}, ${now}
               FROM webhook_endpoints e
               CROSS JOIN jsonb_to_recordset(${events}::jsonb)
                    AS m(seed uuid, type text, user_id text, payload jsonb)
               WHERE e.tenant_id = ${tenant} AND m.type = ANY(e.events)"""


def event_rows(events: list[WebhookEvent], now: datetime) -> list[dict[str, Any]]:
    return [e.row(now, uuid.uuid4()) for e in events]


async def emit(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, events: list[WebhookEvent], now: datetime
) -> None:
    """The deliveries of `events` (one statement; nothing when `events` is empty)."""
    if events:
        await conn.execute(deliveries_cte(1, 2, 3), tenant_id, now, event_rows(events, now))


# ---------------------------------------------------------------------------- endpoints

_ENDPOINT = """id, url, description, events, created_at, updated_at, previous_until"""


async def insert_endpoint(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    endpoint_id: uuid.UUID,
    url: str,
    description: str | None,
    events: list[str],
    secret_enc: bytes,
    created_by: uuid.UUID | None,
    now: datetime,
) -> asyncpg.Record:
    row = await conn.fetchrow(
        f"""INSERT INTO webhook_endpoints (tenant_id, id, url, description, events, secret_enc,
                created_by, created_at, updated_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8) RETURNING {_ENDPOINT}""",
        tenant_id,
        endpoint_id,
        url,
        description,
        events,
        secret_enc,
        created_by,
        now,
    )
    assert row is not None
    return row


async def get_endpoint(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, endpoint_id: uuid.UUID
) -> asyncpg.Record | None:
    return await conn.fetchrow(
        f"SELECT {_ENDPOINT} FROM webhook_endpoints WHERE tenant_id = $1 AND id = $2",
        tenant_id,
        endpoint_id,
    )


async def list_endpoints(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, after: uuid.UUID | None, limit: int
) -> list[asyncpg.Record]:
    return list(
        await conn.fetch(
            f"""SELECT {_ENDPOINT} FROM webhook_endpoints
                WHERE tenant_id = $1 AND ($2::uuid IS NULL OR id > $2)
                ORDER BY id LIMIT $3""",
            tenant_id,
            after,
            limit,
        )
    )


async def delete_endpoint(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, endpoint_id: uuid.UUID
) -> bool:
    """Remove the endpoint and (cascade) its deliveries."""
    status = await conn.execute(
        "DELETE FROM webhook_endpoints WHERE tenant_id = $1 AND id = $2", tenant_id, endpoint_id
    )
    return bool(status.endswith(" 1"))


async def rotate_secret(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    endpoint_id: uuid.UUID,
    secret_enc: bytes,
    until: datetime,
    now: datetime,
) -> asyncpg.Record | None:
    """The new secret signs from now on; the current one also signs until `until`."""
    return await conn.fetchrow(
        f"""UPDATE webhook_endpoints SET previous_secret_enc = secret_enc, previous_until = $4,
                secret_enc = $3, updated_at = $5
            WHERE tenant_id = $1 AND id = $2 RETURNING {_ENDPOINT}""",
        tenant_id,
        endpoint_id,
        secret_enc,
        until,
        now,
    )


# ---------------------------------------------------------------------------- deliveries

_DELIVERY = """id, endpoint_id, event_type, user_id, payload, state, attempts, next_attempt_at,
    last_status, last_error, delivered_at, created_at, updated_at"""


async def list_deliveries(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    endpoint_id: uuid.UUID,
    state: str | None,
    after: uuid.UUID | None,
    limit: int,
) -> list[asyncpg.Record]:
    return list(
        await conn.fetch(
            f"""SELECT {_DELIVERY} FROM webhook_deliveries
                WHERE tenant_id = $1 AND endpoint_id = $2
                  AND ($3::text IS NULL OR state = $3) AND ($4::uuid IS NULL OR id > $4)
                ORDER BY id LIMIT $5""",
            tenant_id,
            endpoint_id,
            state,
            after,
            limit,
        )
    )


async def replay(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    endpoint_id: uuid.UUID,
    delivery_id: uuid.UUID,
    now: datetime,
) -> asyncpg.Record | None:
    """A dead delivery back to pending, due now, its attempts reset; the same id (the
    receiver's dedupe key). None when no dead delivery of this endpoint has this id."""
    return await conn.fetchrow(
        f"""UPDATE webhook_deliveries SET state = 'pending', attempts = 0, next_attempt_at = $4,
                updated_at = $4
            WHERE tenant_id = $1 AND endpoint_id = $2 AND id = $3 AND state = 'dead'
            RETURNING {_DELIVERY}""",
        tenant_id,
        endpoint_id,
        delivery_id,
        now,
    )


async def delivery_state(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, endpoint_id: uuid.UUID, delivery_id: uuid.UUID
) -> str | None:
    state: str | None = await conn.fetchval(
        """SELECT state FROM webhook_deliveries
           WHERE tenant_id = $1 AND endpoint_id = $2 AND id = $3""",
        tenant_id,
        endpoint_id,
        delivery_id,
    )
    return state


async def forget_user(conn: asyncpg.Connection, tenant_id: uuid.UUID, user_id: str) -> int:
    """Forget-me: the user's delivered messages go (ids only, but about them); pending and
    dead ones stay, their receivers still have to learn of the deletions."""
    status = await conn.execute(
        """DELETE FROM webhook_deliveries
           WHERE tenant_id = $1 AND user_id = $2 AND state = 'delivered'""",
        tenant_id,
        user_id,
    )
    return int(status.split()[-1])


# ---------------------------------------------------------------------------- dispatch


async def due(conn: asyncpg.Connection, now: datetime, limit: int) -> list[asyncpg.Record]:
    """(id, tenant_id) of deliveries due now, across tenants (a system connection)."""
    return list(await conn.fetch("SELECT * FROM memgate_due_webhooks($1, $2)", limit, now))


async def claim(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    ids: list[uuid.UUID],
    now: datetime,
    lease_until: datetime,
) -> list[asyncpg.Record]:
    """Take the due deliveries among `ids` that no other dispatcher holds (SKIP LOCKED):
    one attempt more each, and not due again before `lease_until`, so a dispatcher that
    dies mid-attempt leaves them to be tried again then. With each, its endpoint's URL and
    the secrets that sign it now."""
    return list(
        await conn.fetch(
            """WITH picked AS (
                   SELECT tenant_id, id FROM webhook_deliveries
                   WHERE tenant_id = $1 AND id = ANY($2::uuid[]) AND state = 'pending'
                     AND next_attempt_at <= $3
                   FOR UPDATE SKIP LOCKED)
               UPDATE webhook_deliveries d
               SET attempts = d.attempts + 1, next_attempt_at = $4, updated_at = $3
               FROM picked, webhook_endpoints e
               WHERE d.tenant_id = picked.tenant_id AND d.id = picked.id
                 AND e.tenant_id = d.tenant_id AND e.id = d.endpoint_id
               RETURNING d.id, d.endpoint_id, d.payload, d.attempts, e.url, e.secret_enc,
                         CASE WHEN e.previous_until > $3 THEN e.previous_secret_enc END
                           AS previous_secret_enc""",
            tenant_id,
            ids,
            now,
            lease_until,
        )
    )


async def record_attempt(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    delivery_id: uuid.UUID,
    now: datetime,
    *,
    state: str,
    next_attempt_at: datetime,
    status: int | None,
    error: str | None,
) -> None:
    await conn.execute(
        """UPDATE webhook_deliveries SET state = $3::text, next_attempt_at = $4,
               last_status = $5, last_error = $6,
               delivered_at = CASE WHEN $3::text = 'delivered' THEN $7::timestamptz END,
               updated_at = $7
           WHERE tenant_id = $1 AND id = $2 AND state = 'pending'""",
        tenant_id,
        delivery_id,
        state,
        next_attempt_at,
        status,
        error,
        now,
    )


async def emit_many(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    batches: list[tuple[list[WebhookEvent], datetime]],
) -> None:
    """`emit` for each (events, time), in order, in one round trip (pipelined)."""
    args = [(tenant_id, at, event_rows(events, at)) for events, at in batches if events]
    if args:
        await conn.executemany(deliveries_cte(1, 2, 3), args)
