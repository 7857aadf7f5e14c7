"""`make run`: one supervisor process for the whole stack.

With DATABASE_URL/REDIS_URL unset it owns an embedded PostgreSQL+pgvector and Redis under
DATA_DIR (as child processes), applies migrations, creates tenant `default` with a
bootstrap admin key on first run, then starts the API (uvicorn) and the arq workers.

`MEMGATE_API_PROCESSES=N` runs uvicorn with `--workers N`: N processes accept on the one
listening socket (uvicorn's own manager replaces one that dies), and their Prometheus
metrics are aggregated in multiprocess mode under DATA_DIR/prometheus.
`MEMGATE_WORKERS=N` runs N arq worker processes (docs/architecture.md#scaling-out).

A child or server that dies is restarted with backoff: PostgreSQL and Redis first (their
stale lock files removed), then the API and the workers. Ctrl-C or SIGTERM stops the
children in order, then the servers: no orphans.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

import asyncpg

from app.cli import create_key, create_tenant
from app.config import get_settings
from app.store import keys as keys_store
from app.store.migrate import migrate

if TYPE_CHECKING:
    from app.embedded import EmbeddedStack

log = logging.getLogger("memgate.run")


async def bootstrap(dsn: str) -> str | None:
    """Migrate; on first run create tenant `default` and return its admin key."""
    await migrate(dsn)
    conn = await asyncpg.connect(dsn)
    try:
        if await keys_store.count_tenants(conn):
            return None
        tenant_id = await create_tenant(conn, "default")
        # the operator's root key: no scope limit, ceiling restricted, so it can create
        # every other key (a key only creates keys within its own rights)
        return await create_key(
            conn, str(tenant_id), "admin", name="bootstrap", max_sensitivity="restricted"
        )
    finally:
        await conn.close()


def child_env(database_url: str, redis_url: str, data_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        DATABASE_URL=database_url,
        REDIS_URL=redis_url,
        DATA_DIR=str(data_dir),
        OMP_NUM_THREADS=env.get("OMP_NUM_THREADS", "1"),
        OPENBLAS_NUM_THREADS=env.get("OPENBLAS_NUM_THREADS", "1"),
    )
    return env


def metrics_dir(data_dir: Path) -> Path:
    """A fresh directory for prometheus-client's multiprocess files (counts restart at
    zero with the stack, as they do for a single process)."""
    path = data_dir / "prometheus"
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


# Restarts back off 0.5 s, 1 s, 2 s ... up to MAX_BACKOFF_S. A process that stayed up for
# HEALTHY_AFTER_S starts again from the shortest delay; one that exits quickly
# GIVE_UP_AFTER times in a row is broken (bad config), and the stack stops.
MIN_BACKOFF_S = 0.5
MAX_BACKOFF_S = 8.0
HEALTHY_AFTER_S = 30.0
GIVE_UP_AFTER = 12


class Backoff:
    """When to try again after a process died, and when to give up."""

    def __init__(self) -> None:
        self.failures = 0
        self.started = time.monotonic()
        self.next_try = 0.0

    def died(self) -> bool:
        """Record an exit; False when the process keeps dying right after its start."""
        now = time.monotonic()
        if now - self.started >= HEALTHY_AFTER_S:
            self.failures = 0
        self.failures += 1
        self.next_try = now + min(MAX_BACKOFF_S, MIN_BACKOFF_S * 2 ** (self.failures - 1))
        return self.failures <= GIVE_UP_AFTER

    def due(self) -> bool:
        return time.monotonic() >= self.next_try

    def restarted(self) -> None:
        self.started = time.monotonic()


class Child:
    """One supervised process (the API, the worker). A crash is restarted with a growing
    delay (an arq worker exits when Redis goes away, for instance); a crash loop stops the
    whole stack."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str]) -> None:
        self.name, self.argv, self.env = name, argv, env
        self.proc: subprocess.Popen[bytes] | None = subprocess.Popen(argv, env=env)
        self.backoff = Backoff()

    def check(self) -> bool:
        """False when it crashed too often; otherwise restarts it (when due) if it exited."""
        if self.proc is not None:
            if self.proc.poll() is None:
                return True
            code = self.proc.returncode
            self.proc = None
            if not self.backoff.died():
                log.error("%s keeps exiting (last code %s); stopping", self.name, code)
                return False
            log.warning("%s exited with %s; restarting it", self.name, code)
        if self.backoff.due():
            self.proc = subprocess.Popen(self.argv, env=self.env)
            self.backoff.restarted()
        return True


class Servers:
    """The embedded PostgreSQL and Redis, restarted like the children when one dies."""

    def __init__(self, stack: EmbeddedStack) -> None:
        self.stack = stack
        self.backoff = Backoff()
        self.down = False

    def check(self) -> bool:
        if not self.down and not self.stack.dead():
            return True
        if not self.down:
            self.down = True
            if not self.backoff.died():
                log.error("the embedded servers keep dying; stopping")
                return False
        if self.backoff.due():
            try:
                restarted = self.stack.revive()
            except Exception as exc:  # e.g. postgres refused to start: try again later
                log.error("restarting the embedded servers failed: %s", exc)
                self.down = False  # counts as another death at the next check
                return True
            self.down = False
            self.backoff.restarted()
            if restarted:
                log.info("embedded %s restarted", " and ".join(restarted))
        return True


def api_argv(host: str, port: int, processes: int) -> list[str]:
    argv = [sys.executable, "-m", "uvicorn", "app.main:create_app", "--factory"]
    argv += ["--host", host, "--port", str(port), "--no-access-log"]
    if processes > 1:
        argv += ["--workers", str(processes)]
    return argv


def start_children(
    env: dict[str, str], host: str, port: int, api_processes: int = 1, workers: int = 1
) -> list[Child]:
    api_env = dict(env)
    if api_processes > 1:
        api_env["PROMETHEUS_MULTIPROC_DIR"] = str(metrics_dir(Path(env["DATA_DIR"])))
    children = [Child("api", api_argv(host, port, api_processes), api_env)]
    for n in range(1, workers + 1):
        name = "worker" if workers == 1 else f"worker-{n}"
        children.append(Child(name, [sys.executable, "-m", "workers"], env))
    return children


def stop_children(children: list[Child], timeout: float = 15) -> None:
    procs = [c.proc for c in children if c.proc is not None]
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for proc in procs:
        try:
            proc.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main() -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(message)s")
    settings = get_settings()
    data_dir = settings.data_dir.resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    stack = None
    stopping = False

    def on_signal(signum: int, _: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)

    database_url, redis_url = settings.database_url, settings.redis_url
    if not database_url or not redis_url:
        from app.embedded import EmbeddedStack

        stack = EmbeddedStack(data_dir)
        stack.start()
        database_url = database_url or stack.database_url
        redis_url = redis_url or stack.redis_url
        log.info("embedded PostgreSQL and Redis under %s", data_dir)
    children: list[Child] = []
    try:
        admin_key = asyncio.run(bootstrap(database_url))
        env = child_env(database_url, redis_url, data_dir)
        children = start_children(
            env, settings.host, settings.port, settings.api_processes, settings.workers
        )
        url = f"http://{settings.host}:{settings.port}"
        print(
            f"memgate is starting on {url}  (readiness: {url}/readyz; "
            f"{settings.api_processes} API process(es), {settings.workers} worker(s))",
            flush=True,
        )
        if admin_key:
            print(
                "First run: tenant 'default' created. Bootstrap admin key (shown once):",
                flush=True,
            )
            print(admin_key, flush=True)
        watched: list[Child | Servers] = [Servers(stack)] if stack is not None else []
        watched += children
        while not stopping:
            for proc in watched:  # the servers first: the API and worker need them
                if not stopping and not proc.check():
                    stopping = True
            time.sleep(0.2)
    finally:
        stop_children(children)
        if stack is not None:
            stack.stop()
        log.info("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
