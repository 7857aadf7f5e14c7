"""The "cleanup" job: a large operators' cleanup, run in batches (app/cleanup.py), its
progress `{total, done, by_user}` on the job row (docs/api.md#jobs)."""

from __future__ import annotations

import uuid

from app.cleanup import filter_from_json, run_cleanup
from workers.jobs import JobResult, JobRun


async def handle_cleanup(run: JobRun) -> JobResult:
    p = run.payload
    result = await run_cleanup(
        run.app,
        run.tenant_id,
        filter_from_json(p["filter"]),
        p["action"],
        run.now,
        actor=uuid.UUID(p["actor"]) if p.get("actor") else None,
        actor_role=p.get("actor_role"),
        policy_version=p.get("policy_version"),
        job_id=run.id,
    )
    return JobResult(result={**result, "done": result["total"]})
