"""`python -m workers`: run one arq worker with memgate's settings."""

from arq import run_worker

from workers.settings import WorkerSettings

if __name__ == "__main__":
    run_worker(WorkerSettings)  # type: ignore[arg-type]
