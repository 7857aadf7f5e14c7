"""The outbox relay: hands jobs the API could not enqueue (Redis down, crash) to arq.

Runs as a background task in every worker. Each pass asks PostgreSQL for jobs never
enqueued, jobs queued but enqueued long ago (Redis lost them) and jobs left `running` by
a dead worker, and enqueues them with their id as arq job id. Several relays, or a relay
racing the API, are harmless: arq ignores a job id it already holds, and a finished job
is skipped by `run_job`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import timedelta

from app import clock
from app.context import AppContext
from app.queue import enqueue_many
from app.store import jobs as jobs_store

log = logging.getLogger("memgate.relay")

BATCH = 500
REENQUEUE_AFTER_S = 120.0  # a queued job arq has not run by then is handed over again
ENQUEUE_TIMEOUT_S = 5.0


class Relay:
    def __init__(self, app: AppContext, *, interval_s: float | None = None) -> None:
        self.app = app
        self.interval_s = interval_s if interval_s is not None else app.settings.relay_interval_s
        self._task: asyncio.Task[None] | None = None

    async def run_once(self) -> int:
        """One pass; returns how many jobs were handed to arq."""
        now = clock.now()
        # A running job older than arq's job_timeout (+ arq's 10 s margin) has no live
        # worker: arq would have cancelled it.
        running_before = now - timedelta(seconds=self.app.settings.job_timeout_s + 30)
        jobs = await jobs_store.to_relay(
            self.app.pool, BATCH, now - timedelta(seconds=REENQUEUE_AFTER_S), running_before
        )
        if not jobs:
            return 0
        unique = list(dict.fromkeys(jobs))
        handed = await enqueue_many(self.app, unique, timeout_s=ENQUEUE_TIMEOUT_S)
        if handed:
            log.info("relay handed %d job(s) to arq", handed)
        return handed

    async def _loop(self) -> None:
        while True:
            try:
                await self.run_once()
            except Exception:  # a database or Redis outage: try again next pass
                log.exception("relay pass failed")
            await asyncio.sleep(self.interval_s)

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._loop(), name="memgate-relay")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
