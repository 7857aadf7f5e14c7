"""Idempotency records (docs/api.md#idempotency): one per (tenant, principal, key hash, method,
path).

A record is claimed before its request runs, holds a short lease while it runs (renewed by
the request), and is settled with the answer to replay. See app/api/idempotency.py for
the rules of what is stored and to whom it is replayed.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

import asyncpg

LEASE_SECONDS = 6  # a claim whose request died is free after this (renewed every 2 s)


@dataclass(frozen=True)
class RecordKey:
    tenant_id: uuid.UUID
    principal_id: uuid.UUID
    key: str  # sha256 hex of the header
    method: str
    path: str


@dataclass(frozen=True)
class Existing:
    body_hash: str
    status_code: int | None
    response: str | None
    withheld: bool
    lease_live: bool


_WHERE = "tenant_id = $1 AND principal_id = $2 AND key = $3 AND method = $4 AND path = $5"
_WHERE_I = "i." + _WHERE.replace(" AND ", " AND i.")


def _args(k: RecordKey) -> tuple[uuid.UUID, uuid.UUID, str, str, str]:
    return (k.tenant_id, k.principal_id, k.key, k.method, k.path)


async def claim(
    conn: asyncpg.Connection,
    k: RecordKey,
    claim_id: uuid.UUID,
    body_hash: str,
    user_id: str | None,
    now: datetime,
    expired_before: datetime,
) -> Existing | None:
    """None when this request (`claim_id`) owns the key now; else the record that holds it.

    An expired record (24 h) is taken over whatever its body; an unsettled claim whose
    lease ran out (its request died) only by a retry of the same body."""
    row = await conn.fetchrow(
        f"""INSERT INTO idempotency (tenant_id, principal_id, key, method, path, body_hash,
                                     user_id, created_at, lease_until, claim_id)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8,
                    clock_timestamp() + make_interval(secs => {LEASE_SECONDS}), $10)
            ON CONFLICT (tenant_id, principal_id, key, method, path) DO UPDATE
               SET body_hash = EXCLUDED.body_hash, user_id = EXCLUDED.user_id,
                   created_at = EXCLUDED.created_at, lease_until = EXCLUDED.lease_until,
                   claim_id = EXCLUDED.claim_id,
                   status_code = NULL, response = NULL, withheld = false
             WHERE idempotency.created_at < $9
                OR (idempotency.status_code IS NULL
                    -- the lease ran out: it ends over LEASE_SECONDS before the new one
                    -- (= before the clock; no function here: Citus allows none)
                    AND EXCLUDED.lease_until - idempotency.lease_until
                        > make_interval(secs => {LEASE_SECONDS})
                    AND idempotency.body_hash = EXCLUDED.body_hash)
            RETURNING 1 AS claimed""",
        *_args(k),
        body_hash,
        user_id,
        now,
        expired_before,
        claim_id,
    )
    if row is not None:
        return None
    held = await conn.fetchrow(
        f"""SELECT body_hash, status_code, response, withheld,
                   coalesce(lease_until >= clock_timestamp(), false) AS lease_live
            FROM idempotency WHERE {_WHERE}""",
        *_args(k),
    )
    if held is None:  # removed between the statements (forget-me, release): claim again
        return await claim(conn, k, claim_id, body_hash, user_id, now, expired_before)
    return Existing(
        body_hash=held["body_hash"],
        status_code=held["status_code"],
        response=held["response"],
        withheld=held["withheld"],
        lease_live=held["lease_live"],
    )


async def renew(conn: asyncpg.Connection, k: RecordKey, claim_id: uuid.UUID) -> None:
    await conn.execute(
        # statement_timestamp(), not clock_timestamp(): this statement's own start, and a
        # STABLE function, which Citus takes in an UPDATE (it evaluates it on the coordinator)
        f"""UPDATE idempotency
               SET lease_until = statement_timestamp() + make_interval(secs => {LEASE_SECONDS})
            WHERE {_WHERE} AND status_code IS NULL AND claim_id = $6""",
        *_args(k),
        claim_id,
    )


async def release(conn: asyncpg.Connection, k: RecordKey, claim_id: uuid.UUID) -> None:
    """The request ended without an answer worth keeping: a retry runs it again."""
    await conn.execute(
        f"DELETE FROM idempotency WHERE {_WHERE} AND status_code IS NULL AND claim_id = $6",
        *_args(k),
        claim_id,
    )


async def settle(
    conn: asyncpg.Connection,
    k: RecordKey,
    claim_id: uuid.UUID,
    status: int,
    response: str,
    user_id: str | None,
    withheld: bool,
) -> None:
    """Store the answer (`response` is the exact text sent, kept as a JSON string so a
    replay is byte-identical; a jsonb object would reorder keys). Only an unsettled claim
    is updated: if forget-me removed it while the request ran, nothing comes back; if the
    user was forgotten after the claim was made (its user known only now), it is dropped."""
    forgotten = user_id is not None and await conn.fetchval(
        f"""SELECT EXISTS (
                SELECT 1 FROM audit_events a, idempotency i
                WHERE a.tenant_id = $1 AND a.action = 'forget_me' AND a.user_id = $6
                  AND {_WHERE_I} AND a.created_at >= i.created_at)""",
        *_args(k),
        user_id,
    )
    if forgotten:
        await release(conn, k, claim_id)
        return
    await conn.execute(
        f"""UPDATE idempotency
               SET status_code = $6, response = $7,
                   user_id = coalesce($8, user_id), withheld = $9, lease_until = NULL
            WHERE {_WHERE} AND status_code IS NULL AND claim_id = $10""",
        *_args(k),
        status,
        response,
        user_id,
        withheld,
        claim_id,
    )


async def forget_user(conn: asyncpg.Connection, tenant_id: uuid.UUID, user_id: str) -> int:
    status = await conn.execute(
        "DELETE FROM idempotency WHERE tenant_id = $1 AND user_id = $2", tenant_id, user_id
    )
    return int(status.split()[-1])
