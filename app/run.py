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


def start_children(env: dict[str, str], host: str, port: int) -> list[subprocess.Popen[bytes]]:
    api = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "app.main:create_app", "--factory",
         "--host", host, "--port", str(port), "--no-access-log"],
        env=env,
    )
    worker = subprocess.Popen([sys.executable, "-m", "workers"], env=env)
    return [api, worker]


def stop_children(children: list[subprocess.Popen[bytes]], timeout: float = 15) -> None:
    for child in children:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for child in children:
        try:
            child.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


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
    children: list[subprocess.Popen[bytes]] = []
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
            for child in children:
                if child.poll() is not None:
                    log.error("child %s exited with %s; stopping", child.pid, child.returncode)
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
