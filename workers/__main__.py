"""`python -m workers`: run one arq worker with memgate's settings and job leases."""

from arq.worker import get_kwargs

from workers.leases import LeasedWorker
from workers.settings import WorkerSettings

if __name__ == "__main__":
    kwargs = get_kwargs(WorkerSettings)  # type: ignore[arg-type]
    LeasedWorker(**kwargs, job_lease_s=WorkerSettings.job_lease_s).run()
