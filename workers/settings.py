"""arq WorkerSettings: the worker's context, its job handlers and its cron schedule."""

from __future__ import annotations

from typing import Any, ClassVar

from app.config import get_settings
from app.context import build_context, close_context
from app.logs import configure_logging
from app.metrics import count_in_redis
from app.queue import CLEANUP, IMPORT, OBSERVE, PURGE, QUEUE_NAME, REEMBED, redis_settings
from workers.cleanup import handle_cleanup
from workers.imports import handle_import
from workers.jobs import ARQ_EXTRA_TRIES, Handler, run_job
from workers.maintenance import cron_jobs
from workers.observe import handle_observe
from workers.purge import handle_purge
from workers.reembed import handle_reembed
from workers.relay import Relay
from workers.sessions import cron_jobs as session_cron_jobs
from workers.webhooks import Dispatcher

# Every job kind (jobs.kind) and the one function that runs it. run_job dispatches through
# this map; a job of a kind missing here fails ("unknown job kind").
# tests/unit/test_job_kinds.py checks it against the kinds the code inserts.
HANDLERS: dict[str, Handler] = {
    OBSERVE: handle_observe,
    REEMBED: handle_reembed,
    CLEANUP: handle_cleanup,
    IMPORT: handle_import,
    PURGE: handle_purge,
}

_settings = get_settings()


async def startup(ctx: dict[str, Any]) -> None:
    configure_logging(_settings.log_level)
    ctx["app"] = await build_context(_settings)
    ctx["handlers"] = HANDLERS
    count_in_redis(ctx["app"].redis)  # this process's counts reach the API's /metrics
    # The outbox relay lives in every worker: jobs the API could not enqueue still run.
    ctx["relay"] = Relay(ctx["app"])
    ctx["relay"].start()
    ctx["webhooks"] = Dispatcher(ctx["app"])  # delivers the webhook outbox (docs/webhooks.md)
    ctx["webhooks"].start()


async def shutdown(ctx: dict[str, Any]) -> None:
    count_in_redis(None)
    for task in ("relay", "webhooks"):
        if ctx.get(task) is not None:
            await ctx[task].stop()
    app = ctx.get("app")
    if app is not None:
        await close_context(app)


class WorkerSettings:
    functions: ClassVar[list[Any]] = [run_job]
    cron_jobs: ClassVar[list[Any]] = (
        cron_jobs() + session_cron_jobs() if _settings.cron_enabled else []
    )
    on_startup = startup
    on_shutdown = shutdown
    queue_name = QUEUE_NAME
    redis_settings = redis_settings(_settings.redis_url or "redis://localhost:6379")
    job_timeout = _settings.job_timeout_s
    # run_job counts attempts in PostgreSQL and fails the job itself; arq must not stop
    # first (outage retries count in arq's counter but not in the job's attempts).
    max_tries = _settings.job_max_tries + ARQ_EXTRA_TRIES
    # Job state and outcomes live in PostgreSQL: arq keeps no result, so it never refuses
    # to take the same job id again (it refuses an id whose result it still holds).
    keep_result = 0
    # observe jobs held at once are written in batches (workers/observe.py) of at most
    # BATCH_MAX_JOBS (32): room for three, so while one batch is written in its
    # transaction the next ones extract (with 32, every job slot waited on the
    # batch being written and extraction stalled; with the batch's embedding moved out of
    # its transaction, 150 → 221 turns/s on `make bench`)
    max_jobs = 96
    health_check_interval = 10
    job_lease_s = _settings.job_lease_s  # see workers.leases
