"""What a recall injected and why: the logged recalls under one trace id."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg

from app.auth import Principal, readable_scopes
from app.context import AppContext
from app.errors import NotFound
from app.store import recall as recall_store
from app.store.db import tenant_tx


def _visible(entry: Any, who: Principal) -> bool:
    """A recall in a scope this key may not use is 404 to it, like a fact of that scope."""
    scopes = readable_scopes(who)
    return scopes is None or (entry["scope"] or "global") in scopes


async def trace(
    ctx: AppContext, who: Principal, trace_id: str
) -> tuple[list[asyncpg.Record], dict[uuid.UUID, Any]]:
    """The recalls under `trace_id` this key may see, oldest first, and the facts they
    name by id (deleted ones included); 404 when there is none."""
    if ctx.recall_log is not None:
        await ctx.recall_log.flush()  # a trace asked right after its recall is complete
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        entries = [
            e
            for e in await recall_store.trace_rows(conn, who.tenant_id, trace_id)
            if _visible(e, who)
        ]
        if not entries:
            raise NotFound("trace not found")
        ids = {i for e in entries for i in e["fact_ids"]}
        facts = await recall_store.facts_by_id(conn, who.tenant_id, list(ids))
    return entries, facts
