"""Recovery from faults (issue 21 §6), against real servers.

- A job whose database connection is gone when it starts is retried by arq, not failed.
- The relay notices that arq refuses a job id for a stale key and queues the job again.
- While PostgreSQL or Redis is unreachable the API answers 503 `unavailable` with
  Retry-After (never 500), and /readyz names the dependency that is down.
- The `make run` supervisor restarts an embedded PostgreSQL and Redis killed by SIGKILL
  (answering 503, never 500, meanwhile), even when the dead postmaster's pid file names
  a live process.
- A job lease is short, and the heartbeat keeps a long job leased to its live worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import asyncpg
import httpx
import pytest
from arq.constants import job_key_prefix, result_key_prefix

from app import clock
from app.config import get_settings
from app.queue import QUEUE_NAME
from tests.conftest import Stack, Tenant
from tests.integration.test_jobs_faults import RedisServer, isolated  # noqa: F401
from tests.integration.test_pipeline import observe, running_worker, u, wait_job
from workers.relay import RECHECK_AFTER_S, Relay

# -- a job that meets a dead database ----------------------------------------------------


class _Refused:
    async def __aenter__(self) -> Any:
        raise ConnectionRefusedError(111, "Connection refused")

    async def __aexit__(self, *exc: object) -> bool:
        return False


class FlakyPool:
    """A pool whose next `failures` acquires fail as if PostgreSQL had just gone away."""

    def __init__(self, pool: asyncpg.Pool, failures: int) -> None:
        self.pool, self.failures = pool, failures

    def acquire(self, *args: Any, **kwargs: Any) -> Any:
        if self.failures > 0:
            self.failures -= 1
            return _Refused()
        return self.pool.acquire(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.pool, name)


async def test_job_meeting_a_dead_database_is_retried_not_failed(
    client: httpx.AsyncClient, app: Any, tenant: Tenant
) -> None:
    ctx = app.state.ctx
    job = await observe(client, tenant, "dbgone", [u("user", "记住我的工位在7楼", "d1")])
    flaky = dataclasses.replace(ctx, pool=FlakyPool(ctx.pool, failures=1))
    # no relay: only the job's own retry can bring it to the end within the wait
    async with running_worker(flaky, relay=False):
        body = await wait_job(client, tenant, job, within=20)
    assert body["state"] == "done", body
    assert flaky.pool.failures == 0  # the first run did meet the dead database
    assert [d["decision"] for d in body["decisions"]] == ["written"]


# -- the relay and arq's refusals --------------------------------------------------------


async def test_relay_requeues_a_job_arq_refuses(
    client: httpx.AsyncClient, app: Any, tenant: Tenant
) -> None:
    """arq keeps a final failure's result and refuses that job id while it does: the
    relay must notice and put the job in again, not count it as handed over."""
    ctx = app.state.ctx
    job = await observe(client, tenant, "refused", [u("user", "记住我的工位在9楼", "r1")])
    # what arq leaves after recording a final failure: no job, no queue entry, a result
    await ctx.redis.delete(job_key_prefix + job)
    await ctx.redis.zrem(QUEUE_NAME, job)
    await ctx.redis.set(result_key_prefix + job, b"final failure", ex=3600)
    token = clock.set_request_now(clock.now() + timedelta(seconds=RECHECK_AFTER_S + 5))
    try:
        assert await Relay(ctx).run_once() >= 1
    finally:
        clock.reset_request_now(token)
    assert await ctx.redis.zscore(QUEUE_NAME, job) is not None  # in arq's queue again
    async with running_worker(ctx, relay=False):
        body = await wait_job(client, tenant, job, within=20)
    assert body["state"] == "done" and body["attempts"] == 1


# -- the API while a dependency is away --------------------------------------------------


class PgProxy:
    """TCP on loopback → the embedded PostgreSQL's unix socket; `cut()` makes PostgreSQL
    unreachable for whoever connects through it (open connections drop, new ones are
    refused), like a server that died."""

    def __init__(self, socket_path: str) -> None:
        self.socket_path = socket_path
        self.port = 0
        self.server: asyncio.Server | None = None
        self.writers: list[asyncio.StreamWriter] = []

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_unix_connection(self.socket_path)
        self.writers += [writer, up_writer]

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(Exception):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    def cut(self) -> None:
        if self.server is not None:
            self.server.close()
        for writer in self.writers:
            writer.close()


def _pg_socket(database_url: str) -> str | None:
    parsed = urlparse(database_url)
    host = parse_qs(parsed.query).get("host", [""])[0]
    if not host.startswith("/"):
        return None
    port = parse_qs(parsed.query).get("port", ["5432"])[0]
    return f"{host}/.s.PGSQL.{port}"


@pytest.fixture
async def proxied(migrated: Stack) -> AsyncIterator[tuple[Any, PgProxy]]:
    """A second app instance that reaches PostgreSQL through a proxy the test can cut."""
    from app.main import create_app

    socket_path = _pg_socket(migrated.database_url)
    if socket_path is None:
        pytest.skip("needs the embedded PostgreSQL (a unix socket)")
    proxy = PgProxy(socket_path)
    await proxy.start()
    dsn = f"postgresql://postgres@127.0.0.1:{proxy.port}/postgres"
    settings = get_settings().model_copy(update={"database_url": dsn})
    application = create_app(settings)
    try:
        async with application.router.lifespan_context(application):
            yield application, proxy
    finally:
        proxy.cut()


def _assert_unavailable(res: httpx.Response) -> None:
    assert res.status_code == 503, res.text
    assert res.json()["error"]["code"] == "unavailable"
    assert int(res.headers["Retry-After"]) >= 1


async def test_api_answers_503_while_postgres_is_away(
    proxied: tuple[Any, PgProxy], tenant: Tenant
) -> None:
    application, proxy = proxied
    transport = httpx.ASGITransport(app=application, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://memgate.test") as client:
        body = {
            "type": "semantic",
            "statement": "The user likes green tea",
            "source": {"kind": "explicit_instruction"},
        }
        first = await client.post("/v1/users/pgaway/facts", json=body, headers=tenant.h())
        assert first.status_code == 201, first.text
        assert (await client.get("/readyz")).status_code == 200
        proxy.cut()
        for path, payload in (
            ("/v1/users/pgaway/facts", {**body, "statement": "The user likes oolong"}),
            ("/v1/users/pgaway/recall", {"query": "what does the user drink"}),
            ("/v1/users/pgaway/observations", {"messages": [u("user", "记住我喜欢红茶", "p1")]}),
        ):
            _assert_unavailable(await client.post(path, json=payload, headers=tenant.h()))
        keyed = await client.post(
            "/v1/users/pgaway/facts", json=body, headers=tenant.h(**{"Idempotency-Key": "k1"})
        )
        _assert_unavailable(keyed)  # the idempotency claim meets the dead database first
        ready = await client.get("/readyz")
        _assert_unavailable(ready)
        details = ready.json()["error"]["details"]
        assert details["postgres"].startswith("error") and details["redis"] == "ok"


async def test_api_answers_503_while_redis_is_away(
    isolated: tuple[Any, RedisServer],  # noqa: F811
    tenant: Tenant,
) -> None:
    application, redis = isolated
    transport = httpx.ASGITransport(app=application, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://memgate.test") as client:
        turn = {"user_id": "rdaway", "role": "user", "content": "hello there"}
        ok = await client.post("/v1/sessions/s1/turns", json=turn, headers=tenant.h())
        assert ok.status_code == 201, ok.text
        redis.stop()
        _assert_unavailable(
            await client.post("/v1/sessions/s1/turns", json=turn, headers=tenant.h())
        )
        _assert_unavailable(await client.get("/v1/sessions/s1", headers=tenant.h()))
        ready = await client.get("/readyz")
        _assert_unavailable(ready)
        details = ready.json()["error"]["details"]
        assert details["redis"].startswith("error") and details["postgres"] == "ok"
        # what does not need Redis keeps working
        facts = await client.get("/v1/users/rdaway/facts", headers=tenant.h())
        assert facts.status_code == 200
        redis.start()


# -- the supervisor ----------------------------------------------------------------------


def _wait(pred: Any, within: float, what: str) -> None:
    deadline = time.monotonic() + within
    while not pred():
        assert time.monotonic() < deadline, f"{what} within {within:.0f}s"
        time.sleep(0.2)


def _ready(url: str) -> bool:
    with contextlib.suppress(httpx.HTTPError):
        return httpx.get(f"{url}/readyz", timeout=2).status_code == 200
    return False


def test_supervisor_restarts_killed_embedded_servers(stack: Stack) -> None:
    """`make run` with the embedded stack: SIGKILL its PostgreSQL, then its Redis; the
    supervisor alone brings each back (a stale postmaster.pid is left by the kill)."""
    from bench.chaos import Supervised, free_port

    if os.environ.get("MEMGATE_SKIP_SUPERVISOR_TEST"):
        pytest.skip("MEMGATE_SKIP_SUPERVISOR_TEST is set")
    with tempfile.TemporaryDirectory(prefix="memgate-sup-") as tmp:
        sup = Supervised(Path(tmp), free_port())
        sup.start()
        try:
            sup.wait_ready()
            pidfile = Path(tmp) / "pg" / "postmaster.pid"
            headers = {"Authorization": f"Bearer {sup.admin_key}"}
            statuses: set[int] = set()
            for name in ("postgres", "redis"):
                old = sup.kill(name)
                if name == "postgres":
                    _wait(lambda: not _ready(sup.url), 10, "readyz notices the dead server")
                    assert pidfile.exists()  # the SIGKILLed postmaster's, stale now

                def back(n: str = name, o: int = old) -> bool:
                    with contextlib.suppress(httpx.HTTPError):  # meanwhile: never a 500
                        statuses.add(
                            httpx.get(
                                f"{sup.url}/v1/users/sup/facts", headers=headers, timeout=5
                            ).status_code
                        )
                    return sup.pid_of(n) not in (None, o) and _ready(sup.url)

                _wait(back, 30, f"{name} restarted")
            assert statuses <= {200, 503}, statuses
            assert pidfile.read_text().split()[0] == str(sup.pid_of("postgres"))
            assert sup.proc is not None and sup.proc.poll() is None
            res = httpx.post(
                f"{sup.url}/v1/users/sup/facts",
                json={
                    "type": "semantic",
                    "statement": "The user likes jasmine tea",
                    "source": {"kind": "explicit_instruction"},
                },
                headers=headers,
                timeout=10,
            )
            assert res.status_code == 201, res.text
        finally:
            sup.stop()
        assert sup.proc is not None and sup.proc.returncode == 0


def test_revive_removes_a_stale_postmaster_pid_naming_a_live_process(tmp_path: Path) -> None:
    """A killed postmaster's pid file can name a live process (pids are reused, quickly
    in a container): PostgreSQL then refuses to start. The supervisor's restart removes
    what the dead server left before starting it again."""
    from app.embedded import EmbeddedStack, _service_user

    stack = EmbeddedStack(tmp_path / "d", fast=True)
    stack.start()
    sleeper: subprocess.Popen[bytes] | None = None
    try:
        old = stack.pids["postgres"]
        os.kill(old, signal.SIGKILL)
        _wait(lambda: stack.dead() == ["postgres"], 10, "the postmaster's death is seen")
        user = _service_user()  # postgres runs as it when we are root
        owner = {"user": user.pw_uid, "group": user.pw_gid} if user is not None else {}
        sleeper = subprocess.Popen(["sleep", "60"], **owner)  # type: ignore[call-overload]
        pidfile = stack.pg_data / "postmaster.pid"
        lines = pidfile.read_text().splitlines()
        pidfile.write_text("\n".join([str(sleeper.pid), *lines[1:]]) + "\n")
        assert stack.revive() == ["postgres"]
        assert stack.pids["postgres"] not in (old, sleeper.pid)
        assert pidfile.read_text().split()[0] == str(stack.pids["postgres"])
        assert stack.running and stack.dead() == []
    finally:
        if sleeper is not None:
            sleeper.kill()
            sleeper.wait()
        stack.stop()


async def test_heartbeat_keeps_a_long_job_leased_and_the_lease_is_short(stack: Stack) -> None:
    """A job running longer than its lease stays locked to its live worker (no second
    worker takes it), and a fresh lease is short whatever the longest function timeout."""
    from arq import create_pool, func
    from arq.constants import in_progress_key_prefix

    from app.queue import redis_settings
    from workers.leases import LeasedWorker

    done = asyncio.Event()

    async def slow(ctx: dict[str, Any]) -> str:
        await asyncio.sleep(8.0)
        done.set()
        return "ok"

    queue = f"memgate:test-leases:{os.getpid()}"
    settings = redis_settings(stack.redis_url)
    worker = LeasedWorker(
        functions=[func(slow, name="slow")],
        redis_settings=settings,
        queue_name=queue,
        handle_signals=False,
        poll_delay=0.05,
        job_timeout=600,
        keep_result=0,
        job_lease_s=3.0,
    )
    pool = await create_pool(settings)
    task = asyncio.create_task(worker.async_run())
    try:
        job = await pool.enqueue_job("slow", _job_id="lease-probe", _queue_name=queue)
        assert job is not None
        key = in_progress_key_prefix + "lease-probe"
        deadline = time.monotonic() + 10
        while not await pool.exists(key):
            assert time.monotonic() < deadline, "the job never started"
            await asyncio.sleep(0.02)
        assert 0 < await pool.pttl(key) <= 3000  # not 600 s + 10 s
        await asyncio.sleep(6.0)  # twice the lease: only the heartbeat keeps it
        assert not done.is_set() and await pool.pttl(key) > 0
        await asyncio.wait_for(done.wait(), 10)
        deadline = time.monotonic() + 5
        while await pool.exists(key):  # released when the job ended
            assert time.monotonic() < deadline, "the lease outlived the job"
            await asyncio.sleep(0.05)
    finally:
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
        with contextlib.suppress(BaseException):
            await worker.close()
        await pool.delete(queue)
        await pool.aclose()
