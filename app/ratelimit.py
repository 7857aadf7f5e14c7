"""The per-key rate limit (docs/architecture.md#scaling-out): one token bucket per key in
Redis, shared by every API process and replica, so N processes admit what one would.

The bucket is one hash (`mg:rl:{key id}`: tokens, last refill) updated by a Lua script
that reads Redis's own clock (TIME): atomic, and no skew between the replicas' clocks.
Redis 6.2 compatible. While Redis does not answer (an error, or no answer in
REDIS_TIMEOUT_S), each process falls back to its own bucket with the same rate (fail-open
to a local limit): a Redis outage must not take down the endpoints that do not need
Redis, and a caller is still limited to rate × processes. The local bucket counts only
what it admitted itself and refills meanwhile, so answers from Redis between errors
never hand it a fresh burst.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from dataclasses import dataclass

from redis.asyncio import Redis

log = logging.getLogger("memgate.ratelimit")

# Only a hung Redis times out: a slow answer on a busy host must not switch a process to
# its own bucket (the limit would then count twice).
REDIS_TIMEOUT_S = 5.0
_WARN_EVERY_S = 30.0

# KEYS[1] the bucket; ARGV rate (tokens/s), burst. Returns {admitted 0|1, tokens left}.
_TAKE = """
redis.replicate_commands()
local rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local b = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens, ts = tonumber(b[1]) or burst, tonumber(b[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - ts) * rate)
local admitted = 0
if tokens >= 1 then tokens, admitted = tokens - 1, 1 end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 1000)
return {admitted, tostring(tokens)}
"""


@dataclass(frozen=True)
class Verdict:
    admitted: bool
    retry_after_s: float  # 0 when admitted
    shared: bool  # False: decided by this process alone (Redis did not answer)


def bucket_key(key_id: uuid.UUID) -> str:
    return f"mg:rl:{key_id}"


def _retry_after(tokens: float, rate: float) -> float:
    return round((1 - tokens) / rate, 3)


def take_local(
    buckets: dict[uuid.UUID, tuple[float, float]], key_id: uuid.UUID, rate: float, burst: float
) -> Verdict:
    """The same bucket, in this process's memory."""
    now = time.monotonic()
    tokens, last = buckets.get(key_id, (burst, now))
    tokens = min(burst, tokens + (now - last) * rate)
    if tokens < 1:
        buckets[key_id] = (tokens, now)
        return Verdict(False, _retry_after(tokens, rate), shared=False)
    buckets[key_id] = (tokens - 1, now)
    return Verdict(True, 0.0, shared=False)


class RateLimiter:
    """Token buckets in Redis, with the local fallback."""

    def __init__(self, redis: Redis) -> None:
        self._script = redis.register_script(_TAKE)
        self._warned = 0.0

    async def take(
        self,
        buckets: dict[uuid.UUID, tuple[float, float]],
        key_id: uuid.UUID,
        rate: float,
        burst: float,
    ) -> Verdict:
        try:
            admitted, tokens = await asyncio.wait_for(
                self._script(keys=[bucket_key(key_id)], args=[rate, burst]), REDIS_TIMEOUT_S
            )
        except Exception as exc:  # Redis down or slow: this process decides alone
            if time.monotonic() - self._warned > _WARN_EVERY_S:
                self._warned = time.monotonic()
                log.warning("rate limit: Redis unavailable (%s); local buckets", type(exc).__name__)
            return take_local(buckets, key_id, rate, burst)
        if int(admitted):
            return Verdict(True, 0.0, shared=True)
        return Verdict(False, _retry_after(float(tokens), rate), shared=True)
