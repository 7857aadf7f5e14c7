"""Fault tests for the outbox and the job framework (issue 5 "Done when").

- Redis stops while observations are posted: every post still answers 202; once Redis is
  back every job completes, none is lost, none runs twice — also when Redis comes back
  empty (the relay re-enqueues what it lost).
- A worker process is SIGKILLed in the middle of a job: another worker runs it again
  once the job's lease lapses (seconds, whatever the longest function timeout is), within
  30 s of the kill, and the result is written exactly once.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from app import clock
from app.config import ROOT, get_settings
from app.embedded import redis_server_bin
from tests.conftest import Stack, Tenant
from tests.integration.test_pipeline import observe, running_worker, u, wait_job
from workers.relay import Relay


class RedisServer:
    """A private redis-server (the bundled binary) on a unix socket, with an AOF."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.socket = directory / "redis.sock"
        self.proc: subprocess.Popen[bytes] | None = None
        (directory / "redis.conf").write_text(
            f'port 0\nunixsocket "{self.socket}"\nunixsocketperm 700\ndir "{directory}"\n'
            'appendonly yes\nappendfsync always\nsave ""\n'
        )

    @property
    def url(self) -> str:
        return f"unix://{self.socket}"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [str(redis_server_bin()), str(self.dir / "redis.conf")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while not self.socket.exists():
            if time.monotonic() > deadline:
                raise RuntimeError("redis did not start")
            time.sleep(0.02)

    def stop(self, *, lose_data: bool = False) -> None:
        if self.proc is not None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(10)
            self.proc = None
        self.socket.unlink(missing_ok=True)
        if lose_data:
            for p in self.dir.glob("appendonly*"):
                p.unlink()


@contextmanager
def private_redis() -> Iterator[RedisServer]:
    server = RedisServer(Path(tempfile.mkdtemp(prefix="memgate-redis-")))
    server.start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(server.dir, ignore_errors=True)


@pytest.fixture
async def isolated(migrated: Stack) -> AsyncIterator[tuple[Any, RedisServer]]:
    """The app wired to a Redis of its own, which the test may stop and restart."""
    from app.main import create_app

    with private_redis() as redis:
        settings = get_settings().model_copy(update={"redis_url": redis.url})
        application = create_app(settings)
        async with application.router.lifespan_context(application):
            yield application, redis


@pytest.mark.parametrize("lose_data", [False, True], ids=["redis-restarts", "redis-loses-data"])
async def test_redis_down_while_posting_loses_nothing(
    isolated: tuple[Any, RedisServer], tenant: Tenant, owner_db: asyncpg.Pool, lose_data: bool
) -> None:
    application, redis = isolated
    ctx = application.state.ctx
    transport = httpx.ASGITransport(app=application)
    async with httpx.AsyncClient(transport=transport, base_url="http://memgate.test") as client:
        jobs = [
            await observe(client, tenant, "fr", [u("user", f"记住我的工位在{i}楼", f"w{i}")])
            for i in range(3)
        ]  # enqueued while Redis is up (no worker yet)
        redis.stop(lose_data=lose_data)
        started = time.monotonic()
        for i in range(3, 13):
            jobs.append(
                await observe(client, tenant, "fr", [u("user", f"记住我的工位在{i}楼", f"w{i}")])
            )
        assert time.monotonic() - started < 10  # answered at once, never waiting on Redis
        redis.start()
        async with running_worker(ctx):
            if lose_data:
                # Redis came back empty: the relay hands over again what it had enqueued
                # before, once its last check is older than RECHECK_AFTER_S (time shifted here).
                token = clock.set_request_now(clock.now() + timedelta(minutes=5))
                try:
                    assert await Relay(ctx).run_once() >= 3
                finally:
                    clock.reset_request_now(token)
            bodies = [await wait_job(client, tenant, j, within=30) for j in jobs]
    assert [b["state"] for b in bodies] == ["done"] * 13
    assert all(b["attempts"] == 1 for b in bodies)  # no job ran twice
    async with owner_db.acquire() as conn:
        rows = await conn.fetch(
            """SELECT statement, observations FROM facts
               WHERE tenant_id = $1 AND user_id = 'fr' AND status = 'active'""",
            tenant.id,
        )
    assert len(rows) == 13 and len({r["statement"] for r in rows}) == 13
    assert all(r["observations"] == 1 for r in rows)


def _worker_process(env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "workers"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def _ours(payload: Any) -> bool:
    return "Go 1.22" in json.dumps(payload, ensure_ascii=False)


def _fake_for_this_turn() -> Any:
    """The LLM fake whose script answers only this test's turn: jobs other tests left in
    the shared queue, which the worker may run first, get the default (empty) answer."""
    from tests.fakes.openai_fake import OpenAIFake

    class Fake(OpenAIFake):
        def _next(self, path: str, payload: Any) -> Any:
            if path.endswith("/chat/completions") and not _ours(payload):
                return self.default_chat
            return super()._next(path, payload)

    return Fake()


async def test_worker_killed_mid_job_retries_and_writes_once(
    client: httpx.AsyncClient, tenant: Tenant, stack: Stack, owner_db: asyncpg.Pool
) -> None:
    from tests.fakes.openai_fake import Reply

    reply = {
        "candidates": [
            {
                "type": "semantic",
                "predicate": "tech_stack",
                "value": "Go 1.22",
                "statement": "The user's team uses Go 1.22",
                "evidence": "we use Go 1.22",
                "confidence": 0.9,
                "turn_id": "K1",
                "explicit": True,
            }
        ]
    }
    with _fake_for_this_turn() as fake:
        fake.chat_script.append(Reply.chat(reply, delay=8.0))  # the run that gets killed
        fake.chat_script.append(Reply.chat(reply))
        env = {
            **os.environ,
            "DATABASE_URL": stack.database_url,
            "REDIS_URL": stack.redis_url,
            "MEMGATE_ENV": "test",
            # the default job timeout (60 s): before leases, arq held the dead worker's
            # job for the longest function timeout + 10 s (cron sweeps: 600 s)
            "MEMGATE_JOB_LEASE": "4",
            "MEMGATE_CRON": "false",
            "MEMGATE_EXTRACTOR": "llm",
            "MEMGATE_LLM_BASE_URL": fake.base_url,
            "MEMGATE_LLM_TIMEOUT": "20",
            "MEMGATE_LOG_LEVEL": "WARNING",
        }
        first = _worker_process(env)
        second: subprocess.Popen[bytes] | None = None
        try:
            job = await observe(
                client, tenant, "kill", [u("user", "remember: we use Go 1.22", "K1")]
            )
            deadline = time.monotonic() + 30
            # until the job is in the middle of its LLM call
            while not any(_ours(r.json) for r in fake.chat_requests):
                assert first.poll() is None, first.stderr.read() if first.stderr else b""
                assert time.monotonic() < deadline, "the worker never started the job"
                await asyncio.sleep(0.05)
            first.send_signal(signal.SIGKILL)
            first.wait(5)
            killed_at = time.monotonic()
            async with owner_db.acquire() as conn:
                row = await conn.fetchrow(
                    "SELECT state, attempts FROM jobs WHERE id = $1", uuid.UUID(job)
                )
                assert tuple(row) == ("running", 1)
                assert (
                    await conn.fetchval(
                        "SELECT count(*) FROM facts WHERE tenant_id = $1", tenant.id
                    )
                    == 0
                )
            second = _worker_process(env)
            body = await wait_job(client, tenant, job, within=30 - (time.monotonic() - killed_at))
        finally:
            for proc in (first, second):
                if proc is not None and proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
                    proc.wait(10)
    assert body["state"] == "done" and body["attempts"] == 2
    assert [d["decision"] for d in body["decisions"]] == ["written"]
    async with owner_db.acquire() as conn:
        n = await conn.fetchval(
            "SELECT count(*) FROM facts WHERE tenant_id = $1 AND user_id = 'kill'", tenant.id
        )
        audits = await conn.fetchval(
            "SELECT count(*) FROM audit_events WHERE tenant_id = $1 AND action = 'write'", tenant.id
        )
    assert n == 1 and audits == 1
