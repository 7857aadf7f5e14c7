"""`make run`: one supervisor process for the whole stack.

With DATABASE_URL/REDIS_URL unset it owns an embedded PostgreSQL+pgvector and Redis under
DATA_DIR (as child processes), applies migrations, creates tenant `default` with a
bootstrap admin key on first run, then starts the API (uvicorn) and one arq worker.
Ctrl-C or SIGTERM stops the children in order, then the servers: no orphans.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

import asyncpg

from app.cli import create_key, create_tenant
from app.config import get_settings
from app.store.migrate import migrate

log = logging.getLogger("memgate.run")


async def bootstrap(dsn: str) -> str | None:
    """Migrate; on first run create tenant `default` and return its admin key."""
    await migrate(dsn)
    conn = await asyncpg.connect(dsn)
    try:
        if await conn.fetchval("SELECT count(*) FROM tenants"):
            return None
        tenant_id = await create_tenant(conn, "default")
        return await create_key(conn, str(tenant_id), "admin", name="bootstrap")
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


MAX_RESTARTS = 5  # per RESTART_WINDOW_S; beyond that something is really broken
RESTART_WINDOW_S = 60.0


class Child:
    """One supervised process. A crash is restarted with a growing delay (an arq worker
    exits when Redis goes away, for instance); a crash loop stops the whole stack."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str]) -> None:
        self.name, self.argv, self.env = name, argv, env
        self.proc = subprocess.Popen(argv, env=env)
        self.crashes: list[float] = []

    def check(self) -> bool:
        """False when it crashed too often; otherwise restarts it if it exited."""
        if self.proc.poll() is None:
            return True
        now = time.monotonic()
        self.crashes = [t for t in self.crashes if now - t < RESTART_WINDOW_S] + [now]
        if len(self.crashes) > MAX_RESTARTS:
            log.error("%s keeps exiting (last code %s); stopping", self.name, self.proc.returncode)
            return False
        delay = min(5.0, 2.0 ** (len(self.crashes) - 1))
        log.warning(
            "%s exited with %s; restarting in %.0fs", self.name, self.proc.returncode, delay
        )
        time.sleep(delay)
        self.proc = subprocess.Popen(self.argv, env=self.env)
        return True


def start_children(env: dict[str, str], host: str, port: int) -> list[Child]:
    api = Child(
        "api",
        [
            sys.executable,
            "-m",
            "uvicorn",
            "app.main:create_app",
            "--factory",
            "--host",
            host,
            "--port",
            str(port),
            "--no-access-log",
        ],
        env,
    )
    worker = Child("worker", [sys.executable, "-m", "workers"], env)
    return [api, worker]


def stop_children(children: list[Child], timeout: float = 15) -> None:
    procs = [c.proc for c in children]
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
        children = start_children(env, settings.host, settings.port)
        url = f"http://{settings.host}:{settings.port}"
        print(f"memgate is starting on {url}  (readiness: {url}/readyz)", flush=True)
        if admin_key:
            print(
                "First run: tenant 'default' created. Bootstrap admin key (shown once):",
                flush=True,
            )
            print(admin_key, flush=True)
        while not stopping:
            if not all(child.check() for child in children if not stopping):
                stopping = True
            time.sleep(0.3)
    finally:
        stop_children(children)
        if stack is not None:
            stack.stop()
        log.info("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
