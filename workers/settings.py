"""arq WorkerSettings: the worker's context, its job function and its cron schedule."""

from __future__ import annotations

from typing import Any

from app.config import get_settings
from app.logs import configure_logging
from app.main import build_context, close_context
from app.queue import JOB_RUN, QUEUE_NAME, redis_settings
from workers.jobs import run_job

_settings = get_settings()


async def startup(ctx: dict[str, Any]) -> None:
    configure_logging(_settings.log_level)
    ctx["app"] = await build_context(_settings)


async def shutdown(ctx: dict[str, Any]) -> None:
    app = ctx.get("app")
    if app is not None:
        await close_context(app)


class WorkerSettings:
    functions = [run_job]
    cron_jobs: list[Any] = []
    on_startup = startup
    on_shutdown = shutdown
    queue_name = QUEUE_NAME
    redis_settings = redis_settings(_settings.redis_url or "redis://localhost:6379")
    job_timeout = _settings.job_timeout_s
    max_tries = _settings.job_max_tries
    keep_result = 3600
    max_jobs = 10
    health_check_interval = 10
