"""Test harness: a real embedded PostgreSQL+pgvector and Redis, the real app over HTTP.

With DATABASE_URL and REDIS_URL set, those servers are used instead of the embedded ones.
With MEMGATE_CITUS_WORKERS=N (`make test-citus`) the embedded PostgreSQL is a Citus
coordinator and N workers (docs/scaling.md); without `make citus` first, the session is
skipped, and fails under CI=true.
Each test gets its own tenant (and keys), so tests never see each other's data.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

os.environ.setdefault("MEMGATE_ENV", "test")
os.environ.setdefault("MEMGATE_SECRET", secrets.token_urlsafe(32))
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MEMGATE_LOG_LEVEL", "WARNING")
# webhook endpoints on loopback receivers (tests/integration/test_webhooks.py)
os.environ.setdefault("MEMGATE_WEBHOOK_ALLOW_PRIVATE", "1")


@dataclass
class Stack:
    database_url: str
    redis_url: str
    data_dir: Path
    embedded: Any = None  # the EmbeddedStack when the servers are ours


@pytest.fixture(scope="session")
def stack() -> Iterator[Stack]:
    """The servers for the session; their temp dir is removed at the end (40 MB a run)
    unless MEMGATE_KEEP_TEST_DATA is set."""
    data_dir = Path(tempfile.mkdtemp(prefix="memgate-test-"))
    os.environ.setdefault("DATA_DIR", str(data_dir))
    try:
        if os.environ.get("DATABASE_URL") and os.environ.get("REDIS_URL"):
            yield Stack(os.environ["DATABASE_URL"], os.environ["REDIS_URL"], data_dir)
            return
        from app.embedded import EmbeddedStack, citus_installed, citus_workers_from_env

        if citus_workers_from_env() and not citus_installed():
            reason = "MEMGATE_CITUS_WORKERS is set but Citus is not built: run `make citus`"
            if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
                pytest.fail(reason)
            pytest.skip(reason)
        embedded = EmbeddedStack(data_dir / "stack", fast=True)
        embedded.start()
        os.environ["DATABASE_URL"] = embedded.database_url
        os.environ["REDIS_URL"] = embedded.redis_url
        try:
            yield Stack(embedded.database_url, embedded.redis_url, data_dir, embedded)
        finally:
            embedded.stop()
    finally:
        if not os.environ.get("MEMGATE_KEEP_TEST_DATA"):
            shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture(scope="session")
async def migrated(stack: Stack) -> Stack:
    from app.config import get_settings
    from app.store.migrate import migrate

    get_settings.cache_clear()
    await migrate(stack.database_url)
    return stack


@pytest.fixture(scope="session")
async def owner_db(migrated: Stack) -> AsyncIterator[asyncpg.Pool]:
    """A pool as the owning (superuser) role: for setup and for scanning tables in tests."""
    pool = await asyncpg.create_pool(migrated.database_url, min_size=1, max_size=4)
    assert pool is not None
    yield pool
    await pool.close()


@pytest.fixture(scope="session")
async def app(migrated: Stack) -> AsyncIterator[Any]:
    from app.config import get_settings
    from app.main import create_app

    get_settings.cache_clear()
    application = create_app()
    async with application.router.lifespan_context(application):
        yield application


@pytest.fixture
async def client(app: Any) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://memgate.test") as c:
        yield c


@dataclass
class Tenant:
    id: uuid.UUID
    name: str
    keys: dict[str, str] = field(default_factory=dict)

    def h(self, role: str = "agent", **extra: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys[role]}", **extra}


async def make_tenant(owner_db: asyncpg.Pool, **extra_keys: dict[str, Any]) -> Tenant:
    from app.cli import create_key, create_tenant

    name = f"t-{uuid.uuid4().hex[:10]}"
    async with owner_db.acquire() as conn:
        tenant_id = await create_tenant(conn, name)
        tenant = Tenant(tenant_id, name)
        for role in ("agent", "ops", "admin"):
            tenant.keys[role] = await create_key(conn, str(tenant_id), role)
        # mints user tokens that see everything about the user (forget-me needs one)
        tenant.keys["portal"] = await create_key(
            conn, str(tenant_id), "agent", max_sensitivity="restricted"
        )
        for label, spec in extra_keys.items():
            tenant.keys[label] = await create_key(conn, str(tenant_id), **spec)
    return tenant


@pytest.fixture
async def tenant(owner_db: asyncpg.Pool) -> Tenant:
    return await make_tenant(owner_db)


@pytest.fixture
async def other_tenant(owner_db: asyncpg.Pool) -> Tenant:
    return await make_tenant(owner_db)


@pytest.fixture
def tenant_factory(owner_db: asyncpg.Pool) -> Any:
    async def factory(**extra_keys: dict[str, Any]) -> Tenant:
        return await make_tenant(owner_db, **extra_keys)

    return factory


# ----------------------------------------------------------------------------- live HTTP
# `client` above is in-process (httpx.ASGITransport). `live` below is a real uvicorn
# process on a loopback port, over a real TCP socket, against the same servers: tests of
# the wire (keep-alive after an error, schemathesis, logs) and of authorization use it.


@dataclass
class Live:
    url: str
    log_path: Path
    proc: Any

    def client(self, **kw: Any) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.url, timeout=30, **kw)

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def live(migrated: Stack) -> Iterator[Live]:
    """The API as a uvicorn child process on 127.0.0.1 (its log in DATA_DIR/live-api.log)."""
    import subprocess
    import sys
    import time

    port = _free_port()
    log_path = migrated.data_dir / "live-api.log"
    env = {
        **os.environ,
        "DATABASE_URL": migrated.database_url,
        "REDIS_URL": migrated.redis_url,
        "MEMGATE_CRON": "0",
        "MEMGATE_LOG_LEVEL": "INFO",
    }
    with log_path.open("wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "uvicorn",
                "app.main:create_app",
                "--factory",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--no-access-log",
            ],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"live API exited: {log_path.read_text(errors='replace')[-2000:]}")
        try:
            if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError("live API did not become ready in 90 s")
        time.sleep(0.2)
    try:
        yield Live(url, log_path, proc)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture
async def http(live: Live) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the live server, over a real socket."""
    async with live.client() as c:
        yield c
