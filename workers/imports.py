"""The "import" job: another store's memories through the gate (app/importer.py), in
chunks with their progress on the job row, for a time slice per run."""

from __future__ import annotations

import time

from app.importer import ImportSliceEnded, final_report, run_import
from app.store import jobs as jobs_store
from workers.jobs import JobAlreadyDone, JobResult, JobRun

SLICE_SHARE = 0.6  # of the job timeout: room for the last chunk and the bookkeeping


async def handle_import(run: JobRun) -> JobResult:
    """Decide every item after the last committed chunk; at the end, the report (sorted
    by line) stays on the job and the items leave its payload."""
    deadline = time.monotonic() + run.app.settings.job_timeout_s * SLICE_SHARE
    try:
        finished = await run_import(run.app, run.tenant_id, run.id, run.payload, deadline)
    except ImportSliceEnded:
        raise  # retried at once after a short backoff; the committed chunks stay
    if not finished:
        raise JobAlreadyDone(str(run.id))
    outcome = JobResult()
    async with run.finishing(outcome) as conn:
        row = await jobs_store.get(conn, run.tenant_id, run.id)
        assert row is not None
        outcome.decisions, outcome.result, outcome.payload = final_report(row, run.payload)
    return outcome
