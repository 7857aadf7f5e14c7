"""The long-lived services of a process (pool, Redis, queue, embedder), built once.

The API's lifespan and the worker's startup both build them here (`build_context`).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import asyncpg
from arq import create_pool as create_arq_pool
from redis.asyncio import Redis
from redis.asyncio.cluster import ClusterNode, RedisCluster

from app.auth import load_secret
from app.config import Settings, policy_defaults
from app.memory.policy import Policy, effective_policy
from app.metrics import flush_worker_counts
from app.providers.embedders import Embedder, build_embedder
from app.providers.extract_llm import LLMExtractor, LLMSummarizer
from app.providers.judge import LLMJudge
from app.queue import redis_settings
from app.ratelimit import RateLimiter
from app.store import policies as policies_store
from app.store.db import create_pool

if TYPE_CHECKING:
    from arq.connections import ArqRedis

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
    rate_limiter: RateLimiter | None = None  # the per-key buckets in Redis
    session_cluster: RedisCluster | None = None  # MEMGATE_SESSION_REDIS_CLUSTER, when set
    key_cache: dict[str, tuple[float, Any]] = field(default_factory=dict)
    # key id → (tokens, last refill): the rate limit's buckets of this process alone, used
    # only while Redis (where the shared buckets are) does not answer
    buckets: dict[uuid.UUID, tuple[float, float]] = field(default_factory=dict)
    # (fresh until, kind → (queued, oldest created_at)): the jobs queue, read once a second
    queue_state: tuple[float, dict[str, tuple[int, datetime]]] | None = None

    @property
    def sessions(self) -> Redis | RedisCluster:
        """Where session memory lives: the Redis Cluster when configured, else REDIS_URL."""
        return self.session_cluster if self.session_cluster is not None else self.redis


def cluster_nodes(spec: str) -> list[ClusterNode]:
    """`host:port,host:port,...` → startup nodes (MEMGATE_SESSION_REDIS_CLUSTER)."""
    nodes = []
    for part in (p.strip() for p in spec.split(",")):
        host, sep, port = part.rpartition(":")
        if not part or not sep or not host or not port.isdigit():
            raise RuntimeError(
                f"MEMGATE_SESSION_REDIS_CLUSTER: {part!r} is not host:port (list them with ',')"
            )
        nodes.append(ClusterNode(host.strip("[]"), int(port)))
    return nodes


def embedder_from_settings(settings: Settings) -> Embedder:
    if settings.embedder == "openai":
        if not settings.embed_base_url or not settings.embed_model:
            raise RuntimeError("MEMGATE_EMBEDDER=openai needs MEMGATE_EMBED_BASE_URL and _MODEL")
        return build_embedder(
            "openai",
            base_url=settings.embed_base_url,
            model=settings.embed_model,
            api_key=settings.embed_api_key,
        )
    return build_embedder(settings.embedder)


async def build_context(settings: Settings, *, with_embedder: bool = True) -> AppContext:
    if not settings.database_url or not settings.redis_url:
        raise RuntimeError(
            "DATABASE_URL and REDIS_URL must be set (make run starts the embedded stack for you)"
        )
    pool = await create_pool(
        settings.database_url, min_size=settings.db_pool_min, max_size=settings.db_pool_max
    )
    redis = Redis.from_url(settings.redis_url)
    ctx = AppContext(
        settings=settings,
        pool=pool,
        redis=redis,
        secret=load_secret(settings.secret, settings.data_dir),
        policies=PolicyCache(settings),
    )
    ctx.rate_limiter = RateLimiter(redis)
    if settings.session_redis_cluster:
        ctx.session_cluster = RedisCluster(
            startup_nodes=cluster_nodes(settings.session_redis_cluster)
        )
    ctx.arq = await create_arq_pool(redis_settings(settings.redis_url))
    if settings.llm_base_url:
        ctx.summarizer = LLMSummarizer(
            LLMExtractor(
                base_url=settings.llm_base_url,
                api_key=settings.llm_api_key,
                model=settings.llm_model,
                timeout_s=settings.llm_timeout_s,
                concurrency=settings.llm_concurrency,
                max_retries=1,  # a close waits for it: fail fast to the extractive summary
            )
        )
        ctx.judge = LLMJudge(  # a write waits for it: one attempt, the policy's timeout
            LLMExtractor(
                base_url=settings.llm_base_url,
                api_key=settings.llm_api_key,
                model=settings.llm_model,
                timeout_s=settings.llm_timeout_s,
                concurrency=settings.llm_concurrency,
                max_retries=0,
            )
        )
    if with_embedder:
        ctx.embedder = embedder_from_settings(settings)
        await ctx.embedder.warmup()
    return ctx


async def close_context(ctx: AppContext) -> None:
    if ctx.arq is not None:
        await ctx.arq.aclose()
    if ctx.embedder is not None:
        await ctx.embedder.aclose()
    if ctx.summarizer is not None:
        await ctx.summarizer.aclose()
    if ctx.judge is not None:
        await ctx.judge.aclose()
    if ctx.session_cluster is not None:
        await ctx.session_cluster.aclose()
    await flush_worker_counts(ctx.redis)
    await ctx.redis.aclose()
    await ctx.pool.close()
