"""The "purge" job: an operator's purge of one tenant now (`POST /v1/ops/purge`, `memgate
purge`), the same work as the purge sweep (workers/maintenance.py, docs/lifecycle.md#purge),
its progress `{total, done}` on the job row (docs/api.md#jobs)."""

from __future__ import annotations

from workers.jobs import JobResult, JobRun
from workers.maintenance import purge_tenant


async def handle_purge(run: JobRun) -> JobResult:
    done = await purge_tenant(run.app, run.tenant_id, run.now, job_id=run.id)
    return JobResult(result={"total": done, "done": done})
