"""API keys and user tokens (table api_keys) and tenants.

The tenant and revoke-by-id statements serve the operator's CLI (app/cli.py), which
connects as the database owner, before any tenant is chosen."""

from __future__ import annotations

import uuid
from datetime import datetime

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


async def get_user_token(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, token_id: uuid.UUID
) -> asyncpg.Record | None:
    """A user token's row, read without a lock (the /me page reads it on every request)."""
    return await conn.fetchrow(
        f"SELECT {KEY_COLUMNS} FROM api_keys"
        " WHERE tenant_id = $1 AND id = $2 AND kind = 'user_token'",
        tenant_id,
        token_id,
    )


async def revoke(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, key_id: uuid.UUID
) -> asyncpg.Record | None:
    return await conn.fetchrow(
        f"""UPDATE api_keys SET revoked_at = least(revoked_at, now())
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


async def tenant_by_name(conn: asyncpg.Connection, name: str) -> uuid.UUID | None:
    found = await conn.fetchval("SELECT id FROM tenants WHERE name = $1", name)
    return uuid.UUID(str(found)) if found is not None else None


async def insert_tenant(conn: asyncpg.Connection, tenant_id: uuid.UUID, name: str) -> None:
    await conn.execute("INSERT INTO tenants (id, name) VALUES ($1, $2)", tenant_id, name)


async def tenant_exists(conn: asyncpg.Connection, tenant_id: uuid.UUID) -> bool:
    return bool(
        await conn.fetchval("SELECT EXISTS (SELECT 1 FROM tenants WHERE id = $1)", tenant_id)
    )


async def list_tenants(conn: asyncpg.Connection) -> list[asyncpg.Record]:
    """Every tenant (the console's `tenants list`, on the owner's connection: no RLS)."""
    return list(
        await conn.fetch("SELECT id, name, created_at FROM tenants ORDER BY created_at, id")
    )


async def count_tenants(conn: asyncpg.Connection) -> int:
    return int(await conn.fetchval("SELECT count(*) FROM tenants"))


async def revoke_any(conn: asyncpg.Connection, key_id: uuid.UUID) -> uuid.UUID | None:
    """Revoke a key of whichever tenant (the CLI's `revoke-key`); None if there is none."""
    row = await conn.fetchrow(
        "UPDATE api_keys SET revoked_at = least(revoked_at, now()) WHERE id = $1 RETURNING id",
        key_id,
    )
    return row["id"] if row is not None else None
