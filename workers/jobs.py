"""Placeholder replaced by the job framework."""

from typing import Any


async def run_job(ctx: dict[str, Any], job_id: str, tenant_id: str) -> None:
    raise NotImplementedError
