"""The embedded stack (app/embedded.py): private PostgreSQL + pgvector and Redis as children."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest
import redis.asyncio as aredis

from app import embedded
from app.embedded import (
    EmbeddedError,
    EmbeddedStack,
    _find_processes,
    _pid_alive,
    arq_redis_settings,
)

ROOT = Path(__file__).resolve().parents[2]


def _server_pids(data_dir: Path) -> list[int]:
    """Every live postgres/redis process working in this data dir (ours or leftovers)."""
    pids: list[int] = []
    if (data_dir / "pg").is_dir():
        pids += _find_processes("postgres", (data_dir / "pg").resolve())
    if (data_dir / "redis").is_dir():
        pids += _find_processes("redis-server", (data_dir / "redis").resolve())
    return pids


def _redis(url: str) -> aredis.Redis:
    return aredis.from_url(url)  # type: ignore[no-untyped-call,no-any-return]


def _wait_dead(pids: list[int], timeout: float = 10.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = [p for p in pids if _pid_alive(p)]
        if not alive:
            return []
        time.sleep(0.05)
    return [p for p in pids if _pid_alive(p)]


@pytest.fixture
def stacks() -> Iterator[list[EmbeddedStack]]:
    """Collects stacks so a failing test never leaves servers behind."""
    made: list[EmbeddedStack] = []
    yield made
    for stack in made:
        stack.stop()


async def _pg_exec(stack: EmbeddedStack, sql: str) -> None:
    conn = await asyncpg.connect(stack.database_url)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


async def _pg_val(stack: EmbeddedStack, sql: str) -> object:
    conn = await asyncpg.connect(stack.database_url)
    try:
        return await conn.fetchval(sql)
    finally:
        await conn.close()


@pytest.mark.asyncio
async def test_start_use_stop_restart_persists(tmp_path: Path, stacks: list[EmbeddedStack]) -> None:
    data = tmp_path / "data"
    stack = EmbeddedStack(data)  # run mode: fsync on
    stacks.append(stack)
    stack.start()
    stack.start()  # idempotent
    assert stack.running
    assert stack.database_url.startswith("postgresql://postgres@/postgres?host=/")
    assert stack.redis_url == f"unix://{stack.redis_socket}"

    conn = await asyncpg.connect(stack.database_url)
    try:
        await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        dist = await conn.fetchval("SELECT '[1,2,3]'::vector <-> '[1,2,4]'")
        assert dist == pytest.approx(1.0)
        await conn.execute("CREATE TABLE kept (id int PRIMARY KEY, note text)")
        await conn.execute("INSERT INTO kept VALUES (1, '花生过敏')")
        assert await conn.fetchval("SHOW listen_addresses") == ""
        # run mode sizes the buffer cache from memory (tests' fast mode keeps 128MB)
        blocks = await conn.fetchval(
            "SELECT setting::bigint FROM pg_settings WHERE name = 'shared_buffers'"
        )
        assert f"{blocks * 8 // 1024}MB" == embedded.shared_buffers(False)
    finally:
        await conn.close()
    conn = await asyncpg.connect(**stack.database_dsn_kwargs)
    await conn.close()

    r = _redis(stack.redis_url)
    try:
        assert await r.ping()
        await r.set("queue:key", "value-1")
        assert await r.get("queue:key") == b"value-1"
        assert (await r.config_get("appendonly"))["appendonly"] == "yes"
    finally:
        await r.aclose()

    settings = arq_redis_settings(stack.redis_url)
    assert settings.unix_socket_path == str(stack.redis_socket)

    pids = list(stack.pids.values())
    assert len(pids) == 2
    stack.stop()
    stack.stop()  # idempotent
    assert not stack.running
    assert _wait_dead(pids, 1.0) == []
    assert _server_pids(data) == []
    assert not stack.pg_socket.exists()
    assert not stack.redis_socket.exists()

    stack.start()
    assert await _pg_val(stack, "SELECT note FROM kept WHERE id = 1") == "花生过敏"
    r = _redis(stack.redis_url)
    try:
        assert await r.get("queue:key") == b"value-1"
    finally:
        await r.aclose()
    stack.stop()
    assert (data / "logs" / "postgres.log").stat().st_size > 0
    assert (data / "logs" / "redis.log").stat().st_size > 0


@pytest.mark.asyncio
async def test_two_stacks_side_by_side(tmp_path: Path, stacks: list[EmbeddedStack]) -> None:
    # the second data dir is too long for a unix socket path: sockets move to /tmp
    long_dir = tmp_path / ("x" * 60) / ("y" * 40) / "data"
    a = EmbeddedStack(tmp_path / "a", fast=True)
    b = EmbeddedStack(long_dir, fast=True)
    stacks += [a, b]
    assert str(b.socket_dir).startswith("/tmp/memgate-")
    assert len(str(b.pg_socket)) < 100
    a.start()
    b.start()
    assert a.database_url != b.database_url
    assert a.redis_url != b.redis_url
    await _pg_exec(a, "CREATE TABLE only_a (x int)")
    assert await _pg_val(b, "SELECT to_regclass('only_a') IS NULL") is True
    ra, rb = _redis(a.redis_url), _redis(b.redis_url)
    try:
        await ra.set("who", "a")
        await rb.set("who", "b")
        assert await ra.get("who") == b"a"
        assert await rb.get("who") == b"b"
    finally:
        await ra.aclose()
        await rb.aclose()
    b.stop()
    assert not b.socket_dir.exists()  # the /tmp socket dir is removed on stop
    assert a.running
    assert await _pg_val(a, "SELECT 1") == 1
    a.stop()


def test_same_data_dir_is_locked(tmp_path: Path, stacks: list[EmbeddedStack]) -> None:
    a = EmbeddedStack(tmp_path / "d", fast=True)
    stacks.append(a)
    a.start()
    other = EmbeddedStack(tmp_path / "d", fast=True)
    stacks.append(other)
    with pytest.raises(EmbeddedError, match="in use"):
        other.start()
    assert a.running
    a.stop()
    other.start()  # free again once the first owner stopped
    other.stop()


@pytest.mark.asyncio
async def test_sigkilled_postmaster_recovers(tmp_path: Path, stacks: list[EmbeddedStack]) -> None:
    data = tmp_path / "d"
    stack = EmbeddedStack(data)  # synchronous_commit on: the committed row must survive
    stacks.append(stack)
    stack.start()
    await _pg_exec(stack, "CREATE TABLE t (x int); INSERT INTO t VALUES (42)")
    postmaster = stack.pids["postgres"]
    os.kill(postmaster, signal.SIGKILL)
    assert _wait_dead([postmaster], 5.0) == []
    assert (data / "pg" / "postmaster.pid").exists()  # stale pid file left behind
    assert not stack.running

    stack.start()  # restarts postgres (crash recovery), keeps the running redis
    assert stack.pids["postgres"] != postmaster
    assert await _pg_val(stack, "SELECT x FROM t") == 42
    stack.stop()
    assert _server_pids(data) == []


def _spawn_owner(code: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )


@pytest.mark.asyncio
async def test_leftover_of_killed_owner_is_stopped(
    tmp_path: Path, stacks: list[EmbeddedStack]
) -> None:
    data = tmp_path / "d"
    # an owner without parent-death signal, SIGKILLed: its servers stay behind
    owner = _spawn_owner(
        "import sys, time; from pathlib import Path; from app.embedded import EmbeddedStack;"
        f"s = EmbeddedStack(Path({str(data)!r}), fast=True, pdeathsig=False); s.start();"
        "print('up', flush=True); time.sleep(60)"
    )
    assert owner.stdout is not None
    assert owner.stdout.readline().strip() == "up"
    owner.kill()
    owner.wait()
    leftovers = _server_pids(data)
    assert len(leftovers) >= 2  # postmaster + backends + redis

    stack = EmbeddedStack(data, fast=True)
    stacks.append(stack)
    stack.start()
    assert [p for p in leftovers if _pid_alive(p)] == []
    assert await _pg_val(stack, "SELECT 1") == 1
    stack.stop()
    assert _server_pids(data) == []


def test_module_mode_sigterm_and_owner_death(tmp_path: Path) -> None:
    # python -m app.embedded: prints the URLs, stops cleanly on SIGTERM
    data = tmp_path / "m"
    proc = subprocess.Popen(
        [sys.executable, "-m", "app.embedded", "--data-dir", str(data), "--fast"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        db_line = proc.stdout.readline().strip()
        redis_line = proc.stdout.readline().strip()
        assert db_line.startswith("DATABASE_URL=postgresql://")
        assert redis_line.startswith("REDIS_URL=unix:///")
        servers = _server_pids(data)
        assert servers
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0
        assert _wait_dead(servers, 1.0) == []

        # the owner SIGKILLed: PR_SET_PDEATHSIG takes the servers down with it
        proc = subprocess.Popen(
            [sys.executable, "-m", "app.embedded", "--data-dir", str(data), "--fast"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("DATABASE_URL=")
        assert proc.stdout.readline().startswith("REDIS_URL=")
        servers = _server_pids(data)
        assert servers
        proc.kill()
        proc.wait()
        assert _wait_dead(servers, 15.0) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_shared_buffers_follow_memory_within_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMGATE_PG_SHARED_BUFFERS", raising=False)
    gib = 1 << 30
    for memory, expected in ((24 * gib, "4096MB"), (8 * gib, "2048MB"), (gib // 4, "128MB")):
        monkeypatch.setattr(embedded, "_memory_bytes", lambda m=memory: m)
        assert embedded.shared_buffers(False) == expected
        assert embedded.shared_buffers(True) == "128MB"  # tests
    monkeypatch.setattr(embedded, "_memory_bytes", lambda: None)
    assert embedded.shared_buffers(False) == "128MB"
    monkeypatch.setenv("MEMGATE_PG_SHARED_BUFFERS", "256MB")  # the operator decides
    assert embedded.shared_buffers(False) == "256MB" and embedded.shared_buffers(True) == "256MB"


def test_arq_redis_settings_urls() -> None:
    s = arq_redis_settings("unix:///tmp/x%20y/redis.sock?db=3")
    assert s.unix_socket_path == "/tmp/x y/redis.sock"
    assert s.database == 3
    s = arq_redis_settings("redis://:pw@example.test:6380/2", conn_timeout=5)
    assert (s.host, s.port, s.database, s.password, s.unix_socket_path) == (
        "example.test",
        6380,
        2,
        "pw",
        None,
    )
    assert s.conn_timeout == 5
    with pytest.raises(ValueError):
        arq_redis_settings("http://nope")
