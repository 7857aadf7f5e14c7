"""The tenant's policy: the effective one for a request, and the admin's override."""

from __future__ import annotations

import uuid
from typing import Any

from app.auth import Principal
from app.context import AppContext
from app.memory.policy import Policy
from app.store import audit
from app.store import policies as policies_store
from app.store.db import tenant_tx


async def tenant_policy(ctx: AppContext, tenant_id: uuid.UUID) -> Policy:
    """The tenant's effective policy (file defaults + its override, cached briefly)."""
    async with tenant_tx(ctx.pool, tenant_id) as conn:
        return await ctx.policies.get(conn, tenant_id)


async def override(ctx: AppContext, tenant_id: uuid.UUID) -> dict[str, Any]:
    """The tenant's override as stored ({} when it has none)."""
    async with tenant_tx(ctx.pool, tenant_id) as conn:
        return await policies_store.override(conn, tenant_id)


async def replace_override(
    ctx: AppContext, who: Principal, value: dict[str, Any], version: str
) -> None:
    """Store a validated override (`version`: the effective policy's it makes), audit it,
    and drop this process's cached policy (others follow within the cache TTL)."""
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        await policies_store.replace_override(conn, who.tenant_id, value)
        await audit.record(
            conn,
            who.tenant_id,
            "policy_update",
            actor=who.key_id,
            actor_role=who.role.value,
            policy_version=version,
            detail={"override": value},
        )
    ctx.policies.invalidate(who.tenant_id)
