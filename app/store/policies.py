"""The tenant's policy override (column tenants.policy_override): read and replace.

The effective policy is the file defaults deep-merged with this override
(app.memory.policy.effective_policy); app.context.PolicyCache keeps it for a few seconds.
"""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg


async def override(conn: asyncpg.Connection, tenant_id: uuid.UUID) -> dict[str, Any]:
    """The tenant's override, {} when it has none (call inside its transaction: RLS)."""
    found: dict[str, Any] | None = await conn.fetchval(
        "SELECT policy_override FROM tenants WHERE id = $1", tenant_id
    )
    return found or {}


async def replace_override(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, value: dict[str, Any]
) -> None:
    await conn.execute(
        "UPDATE tenants SET policy_override = $2, updated_at = now() WHERE id = $1",
        tenant_id,
        value,
    )
