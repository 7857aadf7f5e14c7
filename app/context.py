"""The long-lived services of a process (pool, Redis, queue, embedder), built once."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import asyncpg
from redis.asyncio import Redis

from app.config import Settings, policy_defaults
from app.memory.policy import Policy, effective_policy
from app.store import policies as policies_store

if TYPE_CHECKING:
    from arq.connections import ArqRedis

    from app.providers.embedders import Embedder
    from app.providers.extract_llm import LLMSummarizer
    from app.providers.judge import LLMJudge
    from app.recall import RecallLog


class PolicyCache:
    """Effective policy per tenant: file defaults + the tenant's override, cached briefly."""

    ttl_s = 5.0

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._cache: dict[uuid.UUID, tuple[float, Policy]] = {}

    def defaults(self) -> dict[str, Any]:
        return policy_defaults(self._settings.policy_file)

    def cached(self, tenant_id: uuid.UUID) -> Policy | None:
        """The tenant's policy if it is in the cache and fresh (no database needed)."""
        hit = self._cache.get(tenant_id)
        if hit and hit[0] > time.monotonic():
            return hit[1]
        return None

    async def get(self, conn: asyncpg.Connection, tenant_id: uuid.UUID) -> Policy:
        """The tenant's policy; `conn` must be in the tenant's transaction (RLS)."""
        policy = self.cached(tenant_id)
        if policy is not None:
            return policy
        override = await policies_store.override(conn, tenant_id)
        policy = effective_policy(self.defaults(), override)
        self._cache[tenant_id] = (time.monotonic() + self.ttl_s, policy)
        return policy

    def invalidate(self, tenant_id: uuid.UUID) -> None:
        self._cache.pop(tenant_id, None)


@dataclass
class AppContext:
    settings: Settings
    pool: asyncpg.Pool
    redis: Redis
    secret: bytes
    policies: PolicyCache
    arq: ArqRedis | None = None
    embedder: Embedder | None = None
    summarizer: LLMSummarizer | None = None  # session summaries by the LLM, when configured
    judge: LLMJudge | None = None  # the gate's judge of borderline scores, when configured
    recall_log: RecallLog | None = None  # batched recall log writer, started by the API
    key_cache: dict[str, tuple[float, Any]] = field(default_factory=dict)
    # key id → (tokens, last refill): the per-key rate limit's buckets
    buckets: dict[uuid.UUID, tuple[float, float]] = field(default_factory=dict)
