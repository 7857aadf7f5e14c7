"""Prometheus metrics for the API and the workers (docs/architecture.md#observability).

The API's own metrics live in this process's registry. Workers run elsewhere (another
process or container), so they count into a Redis hash that `/metrics` renders too:
one scrape covers both without multiprocess files shared across machines.

Several API processes behind one port (`MEMGATE_API_PROCESSES`, uvicorn `--workers`)
share a scrape: there `make run` sets PROMETHEUS_MULTIPROC_DIR before they start, and
`/metrics` renders every process's counters and histograms from those files, whichever
process answers. Replicas on other machines are scraped one by one, as usual.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
)
from redis.asyncio import Redis

CONTENT_TYPE = CONTENT_TYPE_LATEST
WORKER_METRICS_KEY = "memgate:metrics:worker"

REQUEST_LATENCY = Histogram(
    "memgate_http_request_duration_seconds",
    "HTTP request latency by route",
    ["method", "route", "status"],
    buckets=(0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
)
GATE_DECISIONS = Counter(
    "memgate_gate_decisions_total", "Write-gate decisions", ["decision", "reason", "origin"]
)
RECALLS = Counter("memgate_recalls_total", "Recall calls", ["tier"])
RECALL_HITS = Counter("memgate_recall_hits_total", "Facts injected by recall")
INJECTED_TOKENS = Counter("memgate_recall_injected_tokens_total", "Tokens injected by recall")
FEEDBACK = Counter("memgate_feedback_total", "Feedback on facts", ["useful"])
# An embedding call that failed and was degraded around rather than failing the request
# (docs/recall.md#channels): `fact` stored without a vector, `gate` screened by the rules
# alone, `query` recalled without the dense channel. Non-zero means recall quality is
# silently lower: watch it as an outage, not as noise.
EMBEDDING_FAILURES = Counter(
    "memgate_embedding_failures_total",
    "Embedding calls that failed; the request went on without the vector",
    ["stage"],
)

# Worker-side counters (name → help); labels are encoded in the hash field.
WORKER_COUNTERS: dict[str, str] = {
    "memgate_jobs_total": "Jobs run by workers, by kind and outcome",
    "memgate_job_failures_total": "Job attempts that failed",
    "memgate_promotions_total": "Candidates promoted to facts",
    "memgate_expirations_total": "Facts and candidates expired, by what",
    "memgate_evictions_total": "Facts archived by capacity eviction",
    "memgate_purges_total": "Deleted facts whose text and embedding were erased",
    "memgate_sessions_closed_total": "Sessions closed into a summary, by trigger",
    "memgate_gate_decisions_worker_total": "Write-gate decisions made in workers",
    "memgate_embedding_failures_worker_total": "Embedding calls that failed in workers",
}
_LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


def _field(name: str, labels: dict[str, str]) -> str:
    if not labels:
        return name
    inner = ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(labels.items()) if _LABEL.match(k))
    return f"{name}{{{inner}}}"


def _escape(value: str) -> str:
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")


# Worker-side counts wait here and go to Redis together: one pipelined round trip per
# FLUSH_S and Redis client, not one per decision (a batch of observe jobs counts hundreds).
FLUSH_S = 0.25
_pending: dict[int, tuple[Redis, dict[str, float]]] = {}
_flushers: dict[int, asyncio.Task[None]] = {}


async def worker_incr(redis: Redis, name: str, amount: float = 1, **labels: str) -> None:
    """Count a worker-side event (best effort: metrics never fail a job). Counted in
    Redis within FLUSH_S, or at `flush_worker_counts` (a worker's shutdown)."""
    _, counts = _pending.setdefault(id(redis), (redis, {}))
    key = _field(name, labels)
    counts[key] = counts.get(key, 0) + amount
    task, loop = _flushers.get(id(redis)), asyncio.get_running_loop()
    if task is None or task.done() or task.get_loop() is not loop:
        _flushers[id(redis)] = loop.create_task(_flush_later(redis))


async def _flush_later(redis: Redis) -> None:
    # until nothing waits: counts made while a batch was being sent go in the next one
    while _pending.get(id(redis), (redis, {}))[1]:
        await asyncio.sleep(FLUSH_S)
        await _flush(redis)
    _flushers.pop(id(redis), None)


async def _flush(redis: Redis) -> None:
    _, counts = _pending.pop(id(redis), (redis, {}))
    if not counts:
        return
    try:
        async with redis.pipeline(transaction=False) as pipe:
            for key, amount in counts.items():
                pipe.hincrbyfloat(WORKER_METRICS_KEY, key, amount)
            await pipe.execute()
    except asyncio.CancelledError:
        # stopped while sending (a shutdown): the counts wait again for the last flush
        _, waiting = _pending.setdefault(id(redis), (redis, {}))
        for key, amount in counts.items():
            waiting[key] = waiting.get(key, 0) + amount
        raise
    except Exception:  # metrics are advisory: never fail a job
        pass


async def flush_worker_counts(redis: Redis) -> None:
    """Send the counts still waiting for this client now (before it closes)."""
    task = _flushers.pop(id(redis), None)
    if task is not None and not task.done():
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    await _flush(redis)


# Set in worker processes (workers.settings startup): their counts go to Redis, where the
# API's /metrics can render them; the API process counts in its own registry.
_worker_redis: Redis | None = None


def count_in_redis(redis: Redis | None) -> None:
    global _worker_redis
    _worker_redis = redis


async def count_gate_decision(decision: str, reason: str, origin: str) -> None:
    if _worker_redis is not None:
        await worker_incr(
            _worker_redis,
            "memgate_gate_decisions_worker_total",
            decision=decision,
            reason=reason,
            origin=origin,
        )
    else:
        GATE_DECISIONS.labels(decision, reason, origin).inc()


async def count_embedding_failure(stage: str, amount: int = 1) -> None:
    """One embedding call degraded around (EMBEDDING_FAILURES), in whichever process."""
    if _worker_redis is not None:
        await worker_incr(
            _worker_redis, "memgate_embedding_failures_worker_total", amount, stage=stage
        )
    else:
        EMBEDDING_FAILURES.labels(stage).inc(amount)


def _api_registry() -> CollectorRegistry:
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return REGISTRY  # this process's own
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
    return registry


async def render(
    redis: Redis, gauges: dict[str, tuple[str, list[tuple[dict[str, str], float]]]]
) -> bytes:
    """This process's registry (every API process's, in multiprocess mode), the workers'
    counters and the given gauges, as text."""
    parts = [generate_latest(_api_registry())]
    lines: list[str] = []
    try:
        raw: dict[Any, Any] = await redis.hgetall(WORKER_METRICS_KEY)  # type: ignore[misc]
    except Exception:
        raw = {}
    by_name: dict[str, list[tuple[str, float]]] = {}
    for key, value in raw.items():
        field = key.decode() if isinstance(key, bytes) else str(key)
        name = field.split("{", 1)[0]
        by_name.setdefault(name, []).append((field, float(value)))
    for name, help_text in WORKER_COUNTERS.items():
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} counter")
        for field, value in sorted(by_name.get(name, [])):
            lines.append(f"{field} {value}")
    for name, (help_text, samples) in gauges.items():
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} gauge")
        for labels, value in samples:
            lines.append(f"{_field(name, labels)} {value}")
    parts.append(("\n".join(lines) + "\n").encode())
    return b"".join(parts)
