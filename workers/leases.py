"""Job leases: how long arq keeps a running job locked to the worker that took it.

arq marks a running job with an "in progress" key that expires after the longest timeout
of any registered function plus 10 s; only when it expires does another worker take the
job again. With the cron sweeps declaring 600 s, a SIGKILLed worker held every job it was
running for ten minutes. Here the key is a lease instead: short (sized to the job kind),
renewed by a heartbeat while the function runs, so a live worker keeps its jobs however
long they take and a dead worker's jobs return to the queue within one lease.

  - `run_job` (one row of the jobs table): JOB_LEASE_S (MEMGATE_JOB_LEASE, 15 s);
  - cron sweeps: SWEEP_LEASE_S (60 s): idempotent and rescheduled anyway, so a late
    takeover costs nothing and a longer lease avoids a duplicate sweep under a slow loop;
  - the heartbeat renews every third of the job lease.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from arq import Worker
from arq.constants import in_progress_key_prefix

log = logging.getLogger("memgate.leases")

SWEEP_LEASE_S = 60.0
SWEEP_PREFIX = "memgate:sweep:"  # arq ids of the cron sweeps ("<cron name>:<tick ms>")


def lease_s(job_id: str, job_lease_s: float) -> float:
    """The lease of one arq job, by its kind (the id says whether it is a sweep)."""
    return SWEEP_LEASE_S if job_id.startswith(SWEEP_PREFIX) else job_lease_s


class LeasedWorker(Worker):
    """An arq Worker whose in-progress keys are leases renewed by a heartbeat task."""

    def __init__(self, *args: Any, job_lease_s: float = 15.0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.job_lease_s = job_lease_s
        # what arq sets when it takes a job: the shortest lease, the heartbeat extends it
        self.in_progress_timeout_s = job_lease_s
        self._heartbeat: asyncio.Task[None] | None = None

    async def main(self) -> None:
        self._heartbeat = asyncio.create_task(self._renew_forever(), name="memgate-leases")
        try:
            await super().main()
        finally:
            self._heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._heartbeat

    async def renew_leases(self) -> int:
        """Extend the lease of every job this worker is running; returns how many.

        PEXPIRE only touches a key that exists: a job that finished meanwhile (arq deleted
        its key) is not locked again."""
        running = list(self.job_tasks)
        if not running:
            return 0
        async with self.pool.pipeline(transaction=False) as pipe:
            for job_id in running:
                ms = int(lease_s(job_id, self.job_lease_s) * 1000)
                pipe.pexpire(in_progress_key_prefix + job_id, ms)
            await pipe.execute()
        return len(running)

    async def _renew_forever(self) -> None:
        interval = max(0.5, self.job_lease_s / 3)
        while True:
            await asyncio.sleep(interval)
            try:
                await self.renew_leases()
            except Exception as exc:  # Redis away: arq's own loop notices and exits
                log.warning("lease renewal failed: %s", type(exc).__name__)
