"""Scaling out (docs/architecture.md#scaling-out): many API processes and workers, shared
state in Redis, sessions on a Redis Cluster.

Live sockets: two uvicorn processes on their own loopback ports and two `python -m workers`
processes, against the test servers, under concurrent load through both: one fact per
Idempotency-Key, one active value per single-value predicate, every observation job done
exactly once, one rate limit for a key whatever process it reaches (the fleet runs with a
limit the load tests' fresh keys stay under), and a SIGKILLed API
process while writes are in flight (the other keeps answering; every write answered 2xx
is in the database). The `make run` supervisor with MEMGATE_API_PROCESSES=2 and
MEMGATE_WORKERS=2 is started and stopped by SIGINT (Ctrl-C): nothing is left running.

ASGI transport (in-process): the rate limit's and the recall log's fallback to the
process while Redis is away, and the
session API on a real 3-master Redis Cluster (tests/redis_cluster.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import asyncpg
import httpx
import pytest

from app.config import ROOT, get_settings
from tests.conftest import Stack, Tenant, _free_port
from tests.integration.test_jobs_faults import private_redis
from tests.redis_cluster import redis_cluster

START_TIMEOUT_S = 90
UVICORN = [sys.executable, "-m", "uvicorn", "app.main:create_app", "--factory"]


@dataclass
class Fleet:
    """API processes (one port each) and worker processes sharing the test servers."""

    apis: list[subprocess.Popen[bytes]]
    urls: list[str]
    workers: list[subprocess.Popen[bytes]]

    def clients(self) -> list[httpx.AsyncClient]:
        return [httpx.AsyncClient(base_url=url, timeout=60) for url in self.urls]


def _env(stack: Stack, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "DATABASE_URL": stack.database_url,
        "REDIS_URL": stack.redis_url,
        "MEMGATE_LOG_LEVEL": "WARNING",
        **extra,
    }


def _start_api(env: dict[str, str], port: int, log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            [*UVICORN, "--host", "127.0.0.1", "--port", str(port), "--no-access-log"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def _wait_ready(urls: list[str], procs: list[subprocess.Popen[bytes]]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    pending = list(urls)
    while pending:
        for proc in procs:
            assert proc.poll() is None, f"a process exited with {proc.returncode}"
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{pending[0]}/readyz", timeout=2).status_code == 200:
                pending.pop(0)
                continue
        assert time.monotonic() < deadline, f"{pending[0]} not ready"
        time.sleep(0.2)


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
    for proc in procs:
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def fleet_of(stack: Stack, apis: int, workers: int, **env_extra: str) -> Iterator[Fleet]:
    log = stack.data_dir / "scaleout.log"
    api_env = _env(stack, MEMGATE_CRON="0", **env_extra)
    ports = [_free_port() for _ in range(apis)]
    api_procs = [_start_api(api_env, port, log) for port in ports]
    worker_procs = []
    with log.open("ab") as out:
        for _ in range(workers):
            worker_procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "workers"],
                    cwd=ROOT,
                    env=_env(stack, MEMGATE_JOB_LEASE="5", **env_extra),
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
            )
    try:
        urls = [f"http://127.0.0.1:{port}" for port in ports]
        _wait_ready(urls, api_procs + worker_procs)
        yield Fleet(api_procs, urls, worker_procs)
    finally:
        _stop(api_procs + worker_procs)


# One limit for every key of the fleet. Each test's tenant has fresh keys (fresh
# buckets) and the load tests send fewer than BURST requests per key; the rate-limit
# test sends far more than BURST with one key.
RATE, BURST = 5.0, 40


@pytest.fixture(scope="module")
def fleet(migrated: Stack) -> Iterator[Fleet]:
    limit = {"MEMGATE_RATE_LIMIT_RPS": str(RATE), "MEMGATE_RATE_LIMIT_BURST": str(BURST)}
    with fleet_of(migrated, apis=2, workers=2, **limit) as f:
        yield f


@pytest.fixture
async def both(fleet: Fleet) -> AsyncIterator[list[httpx.AsyncClient]]:
    clients = fleet.clients()
    try:
        yield clients
    finally:
        for c in clients:
            await c.aclose()


def _uid(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


# -- exactly once across processes ----------------------------------------------------


async def test_one_fact_per_idempotency_key_sent_to_both_processes_at_once(
    both: list[httpx.AsyncClient], tenant: Tenant, owner_db: asyncpg.Pool
) -> None:
    user = _uid("idem")
    sends = []
    for i in range(8):
        body = {
            "type": "semantic",
            "statement": f"The user's locker number is {100 + i}",
            "source": {"kind": "explicit_instruction"},
        }
        headers = tenant.h(**{"Idempotency-Key": f"scale-{user}-{i}"})
        for c in both:  # the same key and body through both processes, concurrently
            sends.append(c.post(f"/v1/users/{user}/facts", json=body, headers=headers))
    answers = await asyncio.gather(*sends)
    assert all(a.status_code == 201 for a in answers), [a.text[:200] for a in answers]
    for i in range(8):
        pair = answers[2 * i : 2 * i + 2]
        assert pair[0].json()["fact"]["id"] == pair[1].json()["fact"]["id"]  # one answer
    rows = await owner_db.fetch(
        "SELECT statement FROM facts WHERE tenant_id = $1 AND user_id = $2", tenant.id, user
    )
    assert sorted(r["statement"] for r in rows) == sorted(
        f"The user's locker number is {100 + i}" for i in range(8)
    )
    writes = await owner_db.fetchval(
        "SELECT count(*) FROM audit_events WHERE tenant_id = $1 AND user_id = $2"
        " AND action = 'write'",
        tenant.id,
        user,
    )
    assert writes == 8  # each key's write ran (and was audited) once


async def test_one_active_value_per_single_value_predicate(
    both: list[httpx.AsyncClient], tenant: Tenant, owner_db: asyncpg.Pool
) -> None:
    user = _uid("pred")
    sends = [
        both[i % 2].post(
            f"/v1/users/{user}/facts",
            json={
                "type": "profile",
                "predicate": "home_city",
                "value": f"City {i}",
                "statement": f"The user lives in City {i}",
                "source": {"kind": "explicit_instruction"},
            },
            headers=tenant.h(),
        )
        for i in range(12)
    ]
    answers = await asyncio.gather(*sends)
    assert all(a.status_code < 300 for a in answers), [a.text[:200] for a in answers]
    active = await owner_db.fetch(
        """SELECT value FROM facts WHERE tenant_id = $1 AND user_id = $2
           AND predicate = 'home_city' AND status = 'active'""",
        tenant.id,
        user,
    )
    assert len(active) == 1, active
    total = await owner_db.fetchval(
        "SELECT count(*) FROM facts WHERE tenant_id = $1 AND user_id = $2",
        tenant.id,
        user,
    )
    assert total == 12  # the others are kept as history, none lost


async def test_every_observation_job_runs_once_across_two_workers(
    both: list[httpx.AsyncClient], tenant: Tenant, owner_db: asyncpg.Pool
) -> None:
    user = _uid("obs")
    n = 12
    posts = [
        both[i % 2].post(
            f"/v1/users/{user}/observations",
            json={
                "messages": [
                    {"role": "user", "content": f"记住我的工位在{i + 3}楼", "turn_id": f"w{i}"}
                ]
            },
            headers=tenant.h(),
        )
        for i in range(n)
    ]
    answers = await asyncio.gather(*posts)
    assert all(a.status_code == 202 for a in answers), [a.text[:200] for a in answers]
    jobs = [a.json()["job_id"] for a in answers]
    bodies = []
    deadline = time.monotonic() + 90
    for i, job in enumerate(jobs):
        while True:
            res = await both[i % 2].get(f"/v1/jobs/{job}", headers=tenant.h("ops"))
            if res.status_code == 429:  # polling a slow run outlasts the burst: back off
                assert time.monotonic() < deadline, res.text
                await asyncio.sleep(res.json()["error"]["details"]["retry_after_s"])
                continue
            assert res.status_code == 200, res.text
            if res.json()["state"] in ("done", "failed"):
                bodies.append(res.json())
                break
            assert time.monotonic() < deadline, res.json()
            await asyncio.sleep(0.25)  # under RATE: the poll does not spend the burst
    assert [b["state"] for b in bodies] == ["done"] * n
    assert all(b["attempts"] == 1 for b in bodies)  # no job ran twice
    rows = await owner_db.fetch(
        """SELECT statement, observations FROM facts
           WHERE tenant_id = $1 AND user_id = $2 AND status = 'active'""",
        tenant.id,
        user,
    )
    assert len(rows) == n and len({r["statement"] for r in rows}) == n
    assert all(r["observations"] == 1 for r in rows)  # no turn counted twice


async def test_a_trace_is_complete_whichever_process_is_asked(
    both: list[httpx.AsyncClient], tenant: Tenant
) -> None:
    """The recall log is buffered in Redis: the process asked for a trace writes what
    the other one logged a moment ago."""
    user = _uid("trace")
    fact = await both[0].post(
        f"/v1/users/{user}/facts",
        json={
            "type": "semantic",
            "statement": "The user is allergic to peanuts",
            "source": {"kind": "explicit_instruction"},
        },
        headers=tenant.h(),
    )
    assert fact.status_code == 201, fact.text
    for n in range(4):
        trace_id = f"{user}-t{n}"
        r = await both[n % 2].post(
            f"/v1/users/{user}/recall",
            json={"query": "what am I allergic to?", "trace_id": trace_id},
            headers=tenant.h(),
        )
        assert r.status_code == 200, r.text
        got = await both[(n + 1) % 2].get(f"/v1/traces/{trace_id}", headers=tenant.h())
        assert got.status_code == 200, got.text
        assert got.json()["fact_ids"] == [fact.json()["fact"]["id"]]


# -- one rate limit across processes --------------------------------------------------


async def test_rate_limit_is_global_across_two_processes(
    both: list[httpx.AsyncClient], tenant: Tenant
) -> None:
    started = time.monotonic()
    answers = await asyncio.gather(
        *[
            both[i % 2].get(f"/v1/users/{_uid('rl')}/facts", headers=tenant.h())
            for i in range(3 * BURST)
        ]
    )
    elapsed = time.monotonic() - started
    codes = [a.status_code for a in answers]
    assert set(codes) <= {200, 429}, codes
    admitted = codes.count(200)
    # per-process buckets would admit about 2 × (BURST + RATE·t)
    assert BURST <= admitted <= BURST + RATE * elapsed + 1, (admitted, elapsed)
    limited = next(a for a in answers if a.status_code == 429)
    err = limited.json()["error"]
    assert err["code"] == "rate_limited" and err["details"]["retry_after_s"] > 0
    assert int(limited.headers["retry-after"]) >= 1
    # another key has its own bucket, in both processes
    for c in both:
        res = await c.get("/v1/users/rl/facts", headers=tenant.h("ops"))
        assert res.status_code == 200


async def test_rate_limit_and_recall_log_fall_back_to_the_process_while_redis_is_away(
    migrated: Stack, tenant: Tenant
) -> None:
    from app.main import create_app

    with private_redis() as redis:
        settings = get_settings().model_copy(
            update={"redis_url": redis.url, "rate_limit_rps": 0.01, "rate_limit_burst": 2}
        )
        application = create_app(settings)
        async with application.router.lifespan_context(application):
            transport = httpx.ASGITransport(app=application)
            async with httpx.AsyncClient(transport=transport, base_url="http://x") as c:
                path = "/v1/users/rl-away/facts"
                codes = [(await c.get(path, headers=tenant.h())).status_code for _ in range(3)]
                assert codes == [200, 200, 429]  # the shared bucket, in Redis
                redis.stop()
                # fail-open to this process's own bucket (full at first), still limited
                codes = [(await c.get(path, headers=tenant.h())).status_code for _ in range(3)]
                assert codes == [200, 200, 429]
                res = await c.get(path, headers=tenant.h())
                assert res.json()["error"]["code"] == "rate_limited"
                # the recall log waits in this process's memory, and is still written
                r = await c.post(
                    "/v1/users/rl-away/recall",
                    json={"query": "anything?", "trace_id": "rl-away-1"},
                    headers=tenant.h("ops"),
                )
                assert r.status_code == 200, r.text
                assert application.state.ctx.recall_log.pending == 1
                got = await c.get("/v1/traces/rl-away-1", headers=tenant.h("ops"))
                assert got.status_code == 200, got.text
                assert application.state.ctx.recall_log.pending == 0
                redis.start()
                # Redis back: its bucket (still empty for this key) decides again
                assert (await c.get(path, headers=tenant.h())).status_code == 429
                # away again: the local bucket is as it was left, not refilled to a burst
                # by the answers Redis gave meanwhile
                redis.stop()
                assert (await c.get(path, headers=tenant.h())).status_code == 429


# -- sessions on a Redis Cluster ------------------------------------------------------


def test_cluster_nodes_setting_is_parsed_and_checked() -> None:
    from app.context import cluster_nodes

    nodes = cluster_nodes("127.0.0.1:7000, redis-b:7001,[::1]:7002")
    assert [(n.host, n.port) for n in nodes] == [
        ("127.0.0.1", 7000),
        ("redis-b", 7001),
        ("::1", 7002),
    ]
    for bad in ("", "host", "host:", ":7000", "a:1,,b:2", "a:port"):
        with pytest.raises(RuntimeError, match="MEMGATE_SESSION_REDIS_CLUSTER"):
            cluster_nodes(bad)


async def test_sessions_on_a_three_master_redis_cluster(
    migrated: Stack, tenant: Tenant, other_tenant: Tenant, owner_db: asyncpg.Pool
) -> None:
    from redis.asyncio.cluster import RedisCluster

    from app import clock
    from app.context import cluster_nodes
    from app.main import create_app
    from app.session.store import SessionStore
    from workers.sessions import sweep_idle_sessions

    with redis_cluster() as cluster:
        settings = get_settings().model_copy(update={"session_redis_cluster": cluster.spec})
        application = create_app(settings)
        probe = RedisCluster(startup_nodes=cluster_nodes(cluster.spec))
        await probe.initialize()
        async with application.router.lifespan_context(application):
            ctx = application.state.ctx
            assert ctx.sessions is ctx.session_cluster is not None
            # users whose session data lands on three different masters
            users: dict[str, str] = {}
            for n in range(200):
                user = f"cl-{n}"
                node = probe.get_node_from_key(SessionStore.user_key(tenant.id, user))
                users.setdefault(node.name, user)
                if len(users) == 3:
                    break
            assert len(users) == 3
            transport = httpx.ASGITransport(app=application)
            async with httpx.AsyncClient(transport=transport, base_url="http://x") as c:
                for user in users.values():
                    sid = f"s-{user}"
                    for text in ("我想订去上海的机票", "周五出发"):
                        r = await c.post(
                            f"/v1/sessions/{sid}/turns",
                            json={"user_id": user, "role": "user", "content": text},
                            headers=tenant.h(),
                        )
                        assert r.status_code in (200, 201), r.text
                    r = await c.put(
                        f"/v1/sessions/{sid}/slots",
                        json={"slots": {"city": "上海", "date": "周五"}},
                        headers=tenant.h(),
                    )
                    assert r.status_code == 200, r.text
                    r = await c.put(
                        f"/v1/sessions/{sid}/slots", json={"date": None}, headers=tenant.h()
                    )
                    assert r.json()["slots"] == {"city": "上海"}
                    got = (await c.get(f"/v1/sessions/{sid}", headers=tenant.h())).json()
                    assert got["user_id"] == user and got["turn_count"] == 2
                    # another user cannot take the session; another tenant does not see it
                    r = await c.post(
                        f"/v1/sessions/{sid}/turns",
                        json={"user_id": "intruder", "role": "user", "content": "hi"},
                        headers=tenant.h(),
                    )
                    assert r.status_code == 409
                    r = await c.get(f"/v1/sessions/{sid}", headers=other_tenant.h())
                    assert r.status_code == 404
                # each user's keys are on that user's master, all in one slot
                for node_name, user in users.items():
                    sid = f"s-{user}"
                    keys = [
                        SessionStore.key(tenant.id, user, sid),
                        SessionStore.turns_key(tenant.id, user, sid),
                        SessionStore.slots_key(tenant.id, user, sid),
                        SessionStore.user_key(tenant.id, user),
                    ]
                    assert len({probe.keyslot(k) for k in keys}) == 1
                    node = probe.get_node(node_name=node_name)
                    assert node is not None
                    for k in keys:
                        assert await probe.exists(k) == 1
                        assert probe.get_node_from_key(k).name == node_name
                # close through the API (script over the user's slot + the tenant's keys)
                first, second, third = users.values()
                r = await c.post(f"/v1/sessions/s-{first}/close", headers=tenant.h())
                assert r.status_code == 200, r.text
                assert r.json()["closed"] is True
                assert 0 < await probe.ttl(SessionStore.key(tenant.id, first, f"s-{first}"))
                # the idle sweep closes the others (time shifted past idle_minutes)
                closed = await sweep_idle_sessions(ctx, clock.now() + timedelta(hours=2))
                assert closed >= 2
                for user in (second, third):
                    got = (await c.get(f"/v1/sessions/s-{user}", headers=tenant.h())).json()
                    assert got["closed"] is True and got["summary"]
                assert await SessionStore(ctx.sessions).count_open(tenant.id) == 0
                # forget-me erases the user's sessions from the cluster
                tok = await c.post(f"/v1/users/{third}/tokens", json={}, headers=tenant.h("portal"))
                assert tok.status_code == 201, tok.text
                bearer = {"Authorization": f"Bearer {tok.json()['token']}"}
                r = await c.delete("/v1/me", headers=bearer)
                assert r.status_code == 200, r.text
                assert r.json()["deleted"]["sessions"] == 1
                assert await probe.exists(SessionStore.user_key(tenant.id, third)) == 0
                assert await probe.exists(SessionStore.owner_key(tenant.id, f"s-{third}")) == 0
                r = await c.get(f"/v1/sessions/s-{third}", headers=tenant.h())
                assert r.status_code == 404
        await probe.aclose()
    facts = await owner_db.fetchval(
        "SELECT count(*) FROM facts WHERE tenant_id = $1 AND type = 'episodic'", tenant.id
    )
    assert facts == 2  # the summaries of the two users not forgotten


# -- make run with several processes --------------------------------------------------


def _descendants(pid: int) -> set[int]:
    found: set[int] = set()
    frontier = [pid]
    while frontier:
        parent = frontier.pop()
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            with contextlib.suppress(OSError, IndexError, ValueError):
                stat = Path(f"/proc/{entry}/stat").read_text()
                ppid = int(stat[stat.rfind(")") + 2 :].split()[1])
                if ppid == parent and int(entry) not in found:
                    found.add(int(entry))
                    frontier.append(int(entry))
    return found


def _alive(pid: int) -> bool:
    with contextlib.suppress(OSError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat[stat.rfind(")") + 2] not in "ZX"
    return False


def test_make_run_with_two_api_processes_and_two_workers_stops_on_ctrl_c(
    migrated: Stack, tenant: Tenant
) -> None:
    """The supervisor against the test servers (DATABASE_URL/REDIS_URL set): uvicorn
    with two workers on one port, two arq workers; /metrics sums what both processes
    answered; SIGINT to the process group (what Ctrl-C sends) stops every one of them."""
    from bench.chaos import free_port

    if os.environ.get("MEMGATE_SKIP_SUPERVISOR_TEST"):
        pytest.skip("MEMGATE_SKIP_SUPERVISOR_TEST is set")
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="memgate-scale-") as tmp:
        env = _env(
            migrated,
            DATA_DIR=tmp,
            PORT=str(port),
            HOST="127.0.0.1",
            MEMGATE_API_PROCESSES="2",
            MEMGATE_WORKERS="2",
            MEMGATE_CRON="0",
        )
        env.pop("PROMETHEUS_MULTIPROC_DIR", None)
        with (Path(tmp) / "run.log").open("wb") as out:
            sup = subprocess.Popen(
                [sys.executable, "-m", "app.run"],
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group, like a terminal's job
            )
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_ready([url], [sup])
            tree = _descendants(sup.pid)
            cmdlines = [Path(f"/proc/{p}/cmdline").read_bytes() for p in tree if _alive(p)]
            assert sum(b"workers" in c and b"uvicorn" not in c for c in cmdlines) >= 2
            assert sum(b"multiprocessing" in c or b"spawn" in c for c in cmdlines) >= 2
            route = f"/v1/users/{_uid('mr')}/facts"
            for _ in range(12):  # new connections: the kernel spreads them over both
                assert httpx.get(f"{url}{route}", headers=tenant.h(), timeout=10).is_success
            text = httpx.get(f"{url}/metrics", timeout=10).text
            counted = sum(
                float(line.rsplit(" ", 1)[1])
                for line in text.splitlines()
                if line.startswith("memgate_http_request_duration_seconds_count")
                and 'route="/v1/users/{user_id}/facts"' in line
                and 'method="GET"' in line
            )
            assert counted >= 12, text[:2000]
            assert list((Path(tmp) / "prometheus").glob("*.db"))
        finally:
            os.killpg(sup.pid, signal.SIGINT)
            try:
                code = sup.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(sup.pid, signal.SIGKILL)
                raise
        assert code == 0, (Path(tmp) / "run.log").read_text()[-3000:]
        deadline = time.monotonic() + 10
        while any(_alive(p) for p in tree) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [p for p in tree if _alive(p)], "orphans after Ctrl-C"


# -- an API process dies under load ---------------------------------------------------


async def test_a_killed_api_process_loses_no_acknowledged_write(
    fleet: Fleet, both: list[httpx.AsyncClient], tenant: Tenant, owner_db: asyncpg.Pool
) -> None:
    """Last in this module: it SIGKILLs one of the fleet's API processes."""
    user = _uid("kill")
    acked: dict[str, str] = {}  # statement → fact id answered 2xx
    failed_on_dead = 0
    mid_load = asyncio.Event()

    async def writer(n: int) -> None:
        nonlocal failed_on_dead
        for i in range(10):
            statement = f"The user's parcel {n}-{i} goes to door {n * 10 + i}"
            c = both[(n + i) % 2]
            key = ("agent", "portal")[n % 2]  # 30 writes per key: under BURST
            try:
                res = await c.post(
                    f"/v1/users/{user}/facts",
                    json={
                        "type": "semantic",
                        "statement": statement,
                        "source": {"kind": "explicit_instruction"},
                    },
                    headers=tenant.h(key),
                )
            except httpx.TransportError:
                failed_on_dead += 1
                continue
            if res.is_success:
                acked[statement] = res.json()["fact"]["id"]
                if len(acked) >= 10:
                    mid_load.set()

    tasks = [asyncio.create_task(writer(n)) for n in range(6)]
    await mid_load.wait()
    fleet.apis[0].send_signal(signal.SIGKILL)
    fleet.apis[0].wait(10)
    await asyncio.gather(*tasks)
    # the survivor keeps answering
    for i in range(3):
        res = await both[1].get(f"/v1/users/{user}/facts?limit=200", headers=tenant.h("ops"))
        assert res.status_code == 200, i
    rows = await owner_db.fetch(
        """SELECT id, statement FROM facts
           WHERE tenant_id = $1 AND user_id = $2 AND status = 'active'""",
        tenant.id,
        user,
    )
    stored = {r["statement"]: str(r["id"]) for r in rows}
    missing = {s: fid for s, fid in acked.items() if stored.get(s) != fid}
    assert not missing, missing
    assert len(acked) >= 10 and len(acked) + failed_on_dead <= 60
