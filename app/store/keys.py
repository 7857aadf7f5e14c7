"""API keys and user tokens (table api_keys) and tenants."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import asyncpg

from app.auth import hash_secret

KEY_COLUMNS = (
    "id, tenant_id, kind, name, prefix, role, scopes, max_sensitivity, user_id, expires_at,"
    " revoked_at, created_at"
)


async def lookup(conn: asyncpg.Connection, secret: str) -> asyncpg.Record | None:
    """Find a key or token by its hash, before the tenant is known (SECURITY DEFINER)."""
    return await conn.fetchrow("SELECT * FROM memgate_lookup_key($1)", hash_secret(secret))


async def insert_key(
    conn: asyncpg.Connection,
    *,
    tenant_id: uuid.UUID,
    secret: str,
    kind: str,
    role: str,
    name: str | None = None,
    scopes: list[str] | None = None,
    max_sensitivity: str = "personal",
    user_id: str | None = None,
    expires_at: datetime | None = None,
    created_by: uuid.UUID | None = None,
    key_id: uuid.UUID | None = None,
) -> asyncpg.Record:
    row = await conn.fetchrow(
        f"""INSERT INTO api_keys (id, tenant_id, kind, name, prefix, key_hash, role, scopes,
                                  max_sensitivity, user_id, expires_at, created_by)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
            RETURNING {KEY_COLUMNS}""",
        key_id or uuid.uuid4(),
        tenant_id,
        kind,
        name,
        secret[:12],
        hash_secret(secret),
        role,
        scopes,
        max_sensitivity,
        user_id,
        expires_at,
        created_by,
    )
    assert row is not None
    return row


async def list_keys(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    after: uuid.UUID | None,
    limit: int,
    *,
    scopes: list[str] | None = None,
    sensitivities: list[str] | None = None,
) -> list[asyncpg.Record]:
    """Keys whose scopes lie within `scopes` (None: any) and whose ceiling is one of
    `sensitivities` (None: any)."""
    return list(
        await conn.fetch(
            f"""SELECT {KEY_COLUMNS} FROM api_keys
                WHERE tenant_id = $1 AND kind = 'key' AND ($2::uuid IS NULL OR id > $2)
                  AND ($4::text[] IS NULL OR (scopes IS NOT NULL AND scopes <@ $4))
                  AND ($5::text[] IS NULL OR max_sensitivity = ANY($5))
                ORDER BY id LIMIT $3""",
            tenant_id,
            after,
            limit,
            scopes,
            sensitivities,
        )
    )


async def get_key(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, key_id: uuid.UUID
) -> asyncpg.Record | None:
    return await conn.fetchrow(
        f"SELECT {KEY_COLUMNS} FROM api_keys WHERE tenant_id = $1 AND id = $2 FOR UPDATE",
        tenant_id,
        key_id,
    )


async def revoke(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, key_id: uuid.UUID
) -> asyncpg.Record | None:
    return await conn.fetchrow(
        f"""UPDATE api_keys SET revoked_at = coalesce(revoked_at, now())
            WHERE tenant_id = $1 AND id = $2 RETURNING {KEY_COLUMNS}""",
        tenant_id,
        key_id,
    )


async def revoke_user_tokens(conn: asyncpg.Connection, tenant_id: uuid.UUID, user_id: str) -> int:
    result = await conn.execute(
        """UPDATE api_keys SET revoked_at = now()
           WHERE tenant_id = $1 AND user_id = $2 AND kind = 'user_token' AND revoked_at IS NULL""",
        tenant_id,
        user_id,
    )
    return int(result.split()[-1])


def key_json(row: asyncpg.Record) -> dict[str, Any]:
    return {
        "id": str(row["id"]),
        "name": row["name"],
        "prefix": row["prefix"],
        "role": row["role"],
        "scopes": list(row["scopes"]) if row["scopes"] is not None else None,
        "max_sensitivity": row["max_sensitivity"],
        "created_at": row["created_at"].isoformat(),
        "revoked_at": row["revoked_at"].isoformat() if row["revoked_at"] else None,
    }
