"""The outbox relay: makes sure arq queues every job PostgreSQL says is unfinished.

Runs as a background task in every worker. Each pass asks PostgreSQL for jobs never
enqueued (Redis was down, the API crashed), and for unfinished jobs whose hand-over to
arq was last confirmed RECHECK_AFTER_S ago (queued) or that have not changed for as long
(running), and hands them to arq with their id as arq job id. arq refuses an id it still
holds: then the job counts as held when it is in arq's queue (arq runs it: a dead
worker's lease expires, see workers.leases), and is put in again when the key was stale.
So what Redis lost (a restart without the last writes) or dropped (a run that crashed)
is queued again within seconds. Several relays, or a relay racing the API, are harmless:
a finished job is skipped by `run_job`, and a job's writes commit once.
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
RECHECK_AFTER_S = 10.0  # how often an unfinished job's place in arq's queue is checked
ENQUEUE_TIMEOUT_S = 5.0


class Relay:
    def __init__(self, app: AppContext, *, interval_s: float | None = None) -> None:
        self.app = app
        self.interval_s = interval_s if interval_s is not None else app.settings.relay_interval_s
        self._task: asyncio.Task[None] | None = None

    async def run_once(self) -> int:
        """One pass; returns how many jobs were put in arq's queue by it."""
        now = clock.now()
        checked_before = now - timedelta(seconds=RECHECK_AFTER_S)
        jobs = await jobs_store.to_relay(self.app.pool, BATCH, checked_before, checked_before)
        if not jobs:
            return 0
        unique = list(dict.fromkeys(jobs))
        outcome = await enqueue_many(self.app, unique, timeout_s=ENQUEUE_TIMEOUT_S)
        if outcome.handed:
            log.info(
                "relay handed %d job(s) to arq (%d refused for a stale key, put in again); "
                "%d already queued",
                outcome.handed,
                outcome.repaired,
                outcome.held,
            )
        return outcome.handed

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
