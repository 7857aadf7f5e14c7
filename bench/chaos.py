"""`make chaos`: kill parts of a running stack under load; nothing acknowledged is lost.

    python -m bench.chaos [--scenarios worker,redis,postgres,api]

Starts the whole stack the way `make run` does (the supervisor `app.run`, embedded
PostgreSQL and Redis under a temporary DATA_DIR, on a free loopback port), then for each
scenario in turn: 8 clients drive explicit writes (POST /v1/users/{u}/facts, with an
Idempotency-Key, retried with the same key until answered), observations (202 jobs, same
retry rule) and recalls; after a warm-up one process is SIGKILLed — the arq worker,
Redis, PostgreSQL or the API — and nothing but the supervisor brings it back. Then it
checks every acknowledged write and job and prints one line per scenario:

    chaos: <scenario> acknowledged=N lost=0 duplicated=0 stuck_jobs=0 recovered_s=S

- acknowledged: every 2xx write (written/merged/superseded) and every 202 job;
- lost: acknowledged and absent afterwards (the fact is gone, the job failed or vanished);
- duplicated: one Idempotency-Key answered with two different ids, or a fact stored twice;
- stuck_jobs: acknowledged jobs not `done` RECOVERY_LIMIT_S after the fault ended
  (before the worker is killed, BURST observations are posted at once, so that it dies
  with jobs in flight);
- recovered_s: from the kill until the stack serves end to end again (/readyz 200, a
  write acknowledged and an observation posted after the kill done) and every job
  acknowledged before the kill is done.

A scenario fails when any count is not 0 or recovery took more than RECOVERY_LIMIT_S; the
exit code is then 1. Bounded everywhere (each wait has a deadline, the whole run
HARD_TIMEOUT_S), loopback only, and it stops the stack and removes its data at the end
(MEMGATE_KEEP_CHAOS_DATA=1 keeps the directory with the logs).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ("worker", "redis", "postgres", "api")
CLIENTS = 8
WARMUP_S = 6.0
AFTER_RECOVERY_S = 3.0
RECOVERY_LIMIT_S = 30.0
START_TIMEOUT_S = 180.0
HARD_TIMEOUT_S = 1200.0
REQUEST_TIMEOUT_S = 10.0
ACK_DEADLINE_S = 60.0  # a client stops retrying one request after this long
BURST = 40  # observations posted at once just before the worker is killed
PACE_S = 0.3  # between two requests of one client: a load one worker drains as it comes


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        fields = data[data.rfind(b")") + 2 :].split()
        if len(fields) > 1 and fields[0] not in (b"Z", b"X") and int(fields[1]) == pid:
            out.append(int(entry))
    return out


def _cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return [p.decode(errors="replace") for p in fh.read().split(b"\0") if p]
    except OSError:
        return []


class Supervised:
    """`python -m app.run` under a temporary DATA_DIR: the stack `make run` starts."""

    def __init__(self, data_dir: Path, port: int) -> None:
        self.data_dir, self.port = data_dir, port
        self.url = f"http://127.0.0.1:{port}"
        self.admin_key: str | None = None
        self.proc: subprocess.Popen[str] | None = None
        self._lines: list[str] = []

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
        env.update(
            DATA_DIR=str(self.data_dir),
            PORT=str(self.port),
            HOST="127.0.0.1",
            MEMGATE_SECRET=env.get("MEMGATE_SECRET") or secrets.token_urlsafe(32),
            MEMGATE_LOG_LEVEL=env.get("MEMGATE_LOG_LEVEL", "WARNING"),
            MEMGATE_ENV="development",
            OMP_NUM_THREADS="1",
            OPENBLAS_NUM_THREADS="1",
        )
        return env

    def start(self) -> None:
        log = open(self.data_dir / "supervisor.log", "ab")  # open for the child's lifetime
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "app.run"],
            cwd=ROOT,
            env=self.env(),
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            line = line.strip()
            self._lines.append(line)
            if line.startswith("mgk_"):
                self.admin_key = line

    def wait_ready(self, timeout: float = START_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"the supervisor exited with {self.proc.returncode}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/readyz", timeout=2).status_code == 200 and self.admin_key:
                    return
            time.sleep(0.25)
        raise RuntimeError(f"the stack was not ready within {timeout:.0f}s")

    def pid_of(self, name: str) -> int | None:
        """pid of the API, the worker, PostgreSQL's postmaster or Redis."""
        if self.proc is None:
            return None
        if name == "postgres":
            with contextlib.suppress(OSError, ValueError, IndexError):
                pid = int((self.data_dir / "pg" / "postmaster.pid").read_text().split()[0])
                return pid if pid in _children(self.proc.pid) else None
            return None
        marker = {"api": "uvicorn", "worker": "workers", "redis": "redis-server"}[name]
        for pid in _children(self.proc.pid):
            argv = _cmdline(pid)
            if any(marker in part for part in argv[:3]):
                return pid
        return None

    def kill(self, name: str) -> int:
        pid = self.pid_of(name)
        if pid is None:
            raise RuntimeError(f"no {name} process to kill")
        os.kill(pid, signal.SIGKILL)
        return pid

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@dataclass
class Ledger:
    """What the clients were told: acknowledged writes and jobs, and every answer's id."""

    writes: dict[str, tuple[str, str]] = field(default_factory=dict)  # key → (user, fact id)
    jobs: dict[str, str] = field(default_factory=dict)  # key → job id
    acked_at: dict[str, float] = field(default_factory=dict)  # job key → when (monotonic)
    answers: dict[str, set[str]] = field(default_factory=dict)  # key → ids answered
    codes: dict[str, tuple[str, str]] = field(default_factory=dict)  # job key → (user, code)
    recalls: int = 0
    errors: dict[str, int] = field(default_factory=dict)  # status (or error) → count

    def answered(self, key: str, ident: str) -> None:
        self.answers.setdefault(key, set()).add(ident)

    def error(self, what: str) -> None:
        self.errors[what] = self.errors.get(what, 0) + 1

    @property
    def acknowledged(self) -> int:
        return len(self.writes) + len(self.jobs)


class Load:
    """CLIENTS concurrent clients until `stop` is set; each acknowledged answer is noted."""

    def __init__(self, url: str, key: str, scenario: str) -> None:
        self.url, self.scenario = url, scenario
        self.headers = {"Authorization": f"Bearer {key}"}
        self.ledger = Ledger()
        self.stop = asyncio.Event()

    async def _send(
        self, client: httpx.AsyncClient, path: str, body: dict[str, Any], key: str, ok: set[int]
    ) -> httpx.Response | None:
        """POST until answered with a status in `ok` (same Idempotency-Key each time)."""
        deadline = time.monotonic() + ACK_DEADLINE_S
        while time.monotonic() < deadline:
            try:
                res = await client.post(path, json=body, headers={"Idempotency-Key": key})
            except httpx.HTTPError as exc:
                self.ledger.error(type(exc).__name__)
            else:
                if res.status_code in ok:
                    return res
                self.ledger.error(str(res.status_code))
                if res.status_code < 500 and res.status_code not in (409, 429):
                    return None  # refused for good: not acknowledged
            await asyncio.sleep(0.3)
        return None

    async def burst(self, n: int) -> None:
        """n observations at once: the worker has jobs in flight when it is killed."""
        async with httpx.AsyncClient(
            base_url=self.url, headers=self.headers, timeout=REQUEST_TIMEOUT_S
        ) as client:
            await asyncio.gather(
                *(self.observe(client, 99, k, f"chaos-burst-{k % 8}") for k in range(n))
            )

    async def observe(self, client: httpx.AsyncClient, i: int, n: int, user: str) -> None:
        key = f"{self.scenario}-{i}-{n}-{uuid.uuid4().hex[:8]}"
        code = f"{i}{n:05d}-{uuid.uuid4().hex[:4]}"
        content = f"记住我的储物柜编号是{code}号"
        turn = {"role": "user", "content": content, "turn_id": f"{key}-t"}
        body = {"messages": [turn]}
        res = await self._send(client, f"/v1/users/{user}/observations", body, key, {202})
        if res is not None:
            job = str(res.json()["job_id"])
            self.ledger.jobs[key] = job
            self.ledger.codes[key] = (user, code)
            self.ledger.acked_at[key] = time.monotonic()
            self.ledger.answered(key, job)

    async def client(self, i: int) -> None:
        async with httpx.AsyncClient(
            base_url=self.url, headers=self.headers, timeout=REQUEST_TIMEOUT_S
        ) as client:
            n = 0
            while not self.stop.is_set():
                n += 1
                user = f"chaos-{self.scenario}-{i}-{n // 40}"
                key = f"{self.scenario}-{i}-{n}-{uuid.uuid4().hex[:8]}"
                op = n % 3
                if op == 0:
                    body = {
                        "type": "profile",
                        "predicate": f"chaos_item_{i}_{n}",
                        "value": n,
                        "statement": f"The chaos item {i}-{n} of the user is {n}",
                        "source": {"kind": "explicit_instruction"},
                    }
                    res = await self._send(client, f"/v1/users/{user}/facts", body, key, {200, 201})
                    if res is not None:
                        answer = res.json()
                        fact = answer.get("fact") or {}
                        if answer.get("decision") in ("written", "merged", "superseded"):
                            self.ledger.writes[key] = (user, str(fact.get("id")))
                            self.ledger.answered(key, str(fact.get("id")))
                elif op == 1:
                    await self.observe(client, i, n, user)
                else:
                    try:
                        res = await client.post(
                            f"/v1/users/{user}/recall", json={"query": "我的储物柜编号是多少"}
                        )
                    except httpx.HTTPError as exc:
                        self.ledger.error(type(exc).__name__)
                    else:
                        if res.status_code == 200:
                            self.ledger.recalls += 1
                        else:
                            self.ledger.error(str(res.status_code))
                await asyncio.sleep(PACE_S)


async def _ready(client: httpx.AsyncClient) -> bool:
    with contextlib.suppress(httpx.HTTPError):
        return (await client.get("/readyz")).status_code == 200
    return False


async def wait_recovered(url: str, key: str, since: float, limit: float) -> float | None:
    """Seconds from `since` until a write and a fresh observation job both succeed."""
    headers = {"Authorization": f"Bearer {key}"}
    deadline = since + limit + 30  # measure a slow recovery too, but never wait forever
    job: str | None = None
    written = False
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=5) as client:
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError, KeyError, ValueError):
                if await _ready(client):
                    if not written:
                        res = await client.post(
                            "/v1/users/chaos-probe/facts",
                            json={
                                "type": "profile",
                                "predicate": f"probe_{uuid.uuid4().hex[:8]}",
                                "value": 1,
                                "statement": "a probe value of the user is 1",
                                "source": {"kind": "explicit_instruction"},
                            },
                        )
                        written = res.status_code in (200, 201)
                    if written and job is None:
                        res = await client.post(
                            "/v1/users/chaos-probe/observations",
                            json={"messages": [{"role": "user", "content": "记住我喜欢喝绿茶"}]},
                        )
                        if res.status_code == 202:
                            job = str(res.json()["job_id"])
                    if job is not None:
                        res = await client.get(f"/v1/jobs/{job}")
                        if res.status_code == 200 and res.json()["state"] == "done":
                            return time.monotonic() - since
            await asyncio.sleep(0.2)
    return None


async def wait_running(url: str, key: str, ledger: Ledger, until: float) -> None:
    """Until some acknowledged job is running (so a killed worker dies in the middle)."""
    async with httpx.AsyncClient(
        base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=5
    ) as client:
        while time.monotonic() < until:
            for job in list(ledger.jobs.values())[-60:]:
                with contextlib.suppress(httpx.HTTPError, KeyError, ValueError):
                    if (await client.get(f"/v1/jobs/{job}")).json()["state"] == "running":
                        return
            await asyncio.sleep(0.02)


async def wait_jobs_done(url: str, key: str, jobs: list[str], until: float) -> bool:
    """True once every job in `jobs` is done (before `until`)."""
    pending = set(jobs)
    async with httpx.AsyncClient(
        base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=5
    ) as client:
        while pending and time.monotonic() < until:
            for job in list(pending):
                with contextlib.suppress(httpx.HTTPError, KeyError, ValueError):
                    res = await client.get(f"/v1/jobs/{job}")
                    if res.status_code == 200 and res.json()["state"] == "done":
                        pending.discard(job)
            if pending:
                await asyncio.sleep(0.25)
    return not pending


async def verify(url: str, key: str, ledger: Ledger, settle_until: float) -> dict[str, int]:
    """Count lost, duplicated and stuck among what was acknowledged."""
    headers = {"Authorization": f"Bearer {key}"}
    lost = duplicated = stuck = rerun = 0
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=10) as client:
        pending = dict(ledger.jobs)
        while pending and time.monotonic() < settle_until:
            for k, job in list(pending.items()):
                with contextlib.suppress(httpx.HTTPError):
                    res = await client.get(f"/v1/jobs/{job}")
                    if res.status_code == 200 and res.json()["state"] in ("done", "failed"):
                        if res.json()["state"] == "failed":
                            lost += 1
                        rerun += res.json()["attempts"] > 1
                        del pending[k]
                    elif res.status_code == 404:
                        lost += 1
                        del pending[k]
            if pending:
                await asyncio.sleep(0.5)
        stuck = len(pending)
        if pending:
            states: dict[str, int] = {}
            for job in pending.values():
                with contextlib.suppress(httpx.HTTPError, KeyError, ValueError):
                    body = (await client.get(f"/v1/jobs/{job}")).json()
                    what = f"{body['state']}/attempts={body['attempts']}"
                    states[what] = states.get(what, 0) + 1
            print(f"chaos: unfinished jobs: {states}", file=sys.stderr, flush=True)
        duplicated += sum(1 for ids in ledger.answers.values() if len(ids) > 1)
        for user, fact_id in ledger.writes.values():
            res = await client.get(f"/v1/users/{user}/facts/{fact_id}")
            if res.status_code != 200 or res.json().get("status") != "active":
                lost += 1
            elif res.json().get("observations") != 1 or res.json().get("version") != 1:
                duplicated += 1  # the write ran twice: merged into itself or superseded it
        # every observation's locker code: extracted into at most one fact (a job run
        # twice must not write its fact twice)
        by_user: dict[str, list[str]] = {}
        for user, code in ledger.codes.values():
            by_user.setdefault(user, []).append(code)
        for user, codes in by_user.items():
            statements = [str(item["statement"]) for item in await _active_facts(client, user)]
            duplicated += sum(1 for code in codes if sum(code in st for st in statements) > 1)
        for user in {user for user, _ in ledger.writes.values()}:
            seen: dict[str, int] = {}
            for item in await _active_facts(client, user):
                if (item.get("predicate") or "").startswith("chaos_item_"):
                    seen[item["predicate"]] = seen.get(item["predicate"], 0) + 1
            duplicated += sum(n - 1 for n in seen.values() if n > 1)
    print(f"chaos: jobs run more than once (in flight at a fault): {rerun}", file=sys.stderr)
    return {"lost": lost, "duplicated": duplicated, "stuck_jobs": stuck}


async def _active_facts(client: httpx.AsyncClient, user: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(100):  # bounded pagination
        params = {"status": "active", "limit": "200"}
        if cursor:
            params["cursor"] = cursor
        body = (await client.get(f"/v1/users/{user}/facts", params=params)).json()
        out.extend(body["items"])
        cursor = body.get("next_cursor")
        if not cursor:
            break
    return out


def server_errors(errors: dict[str, int]) -> int:
    """Answers of 500 and the like: an outage must answer 503, never those."""
    return sum(
        n for what, n in errors.items() if what.isdigit() and what.startswith("5") and what != "503"
    )


async def scenario(stack: Supervised, name: str) -> tuple[str, bool]:
    assert stack.admin_key is not None
    load = Load(stack.url, stack.admin_key, name)
    clients = [asyncio.create_task(load.client(i)) for i in range(CLIENTS)]
    await asyncio.sleep(WARMUP_S)
    burst = asyncio.create_task(load.burst(BURST if name == "worker" else 0))
    if name == "worker":
        await wait_running(stack.url, stack.admin_key, load.ledger, time.monotonic() + 10)
    killed_at = time.monotonic()
    pid = await asyncio.to_thread(stack.kill, name)
    print(
        f"chaos: {name}: killed pid {pid} ({len(load.ledger.jobs)} jobs acknowledged)",
        file=sys.stderr,
        flush=True,
    )
    recovered = await wait_recovered(stack.url, stack.admin_key, killed_at, RECOVERY_LIMIT_S)
    fault_ended = time.monotonic()
    # recovered also means: the jobs acknowledged before the kill (those in flight in a
    # killed worker included) are done
    await burst
    before = [j for k, j in load.ledger.jobs.items() if load.ledger.acked_at[k] < killed_at]
    limit = killed_at + RECOVERY_LIMIT_S + 30
    if recovered is not None:
        if await wait_jobs_done(stack.url, stack.admin_key, before, limit):
            recovered = max(recovered, time.monotonic() - killed_at)
        else:
            recovered = None
    await asyncio.sleep(AFTER_RECOVERY_S)
    load.stop.set()
    await asyncio.wait_for(asyncio.gather(*clients), ACK_DEADLINE_S + REQUEST_TIMEOUT_S + 5)
    counts = await verify(stack.url, stack.admin_key, load.ledger, fault_ended + RECOVERY_LIMIT_S)
    recovered_s = f"{recovered:.1f}" if recovered is not None else "never"
    line = (
        f"chaos: {name} acknowledged={load.ledger.acknowledged} lost={counts['lost']} "
        f"duplicated={counts['duplicated']} stuck_jobs={counts['stuck_jobs']} "
        f"recovered_s={recovered_s}"
    )
    print(
        f"chaos: {name}: writes={len(load.ledger.writes)} jobs={len(load.ledger.jobs)} "
        f"recalls={load.ledger.recalls} errors={dict(sorted(load.ledger.errors.items()))}",
        file=sys.stderr,
        flush=True,
    )
    ok = (
        recovered is not None
        and recovered <= RECOVERY_LIMIT_S
        and not any(counts.values())
        and load.ledger.acknowledged > 0
        and server_errors(load.ledger.errors) == 0
    )
    return line, ok


async def run(stack: Supervised, names: list[str]) -> bool:
    results = []
    for name in names:
        line, ok = await scenario(stack, name)
        print(line, flush=True)
        results.append(ok)
    return all(results)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.chaos", description=__doc__)
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    args = parser.parse_args(argv)
    names = [n for n in args.scenarios.split(",") if n]
    unknown = set(names) - set(SCENARIOS)
    if unknown:
        parser.error(f"unknown scenario(s): {', '.join(sorted(unknown))}")
    data_dir = Path(tempfile.mkdtemp(prefix="memgate-chaos-"))
    stack = Supervised(data_dir, free_port())
    ok = False
    try:
        stack.start()
        stack.wait_ready()
        print(f"chaos: stack up at {stack.url} (data in {data_dir})", file=sys.stderr, flush=True)
        ok = asyncio.run(asyncio.wait_for(run(stack, names), HARD_TIMEOUT_S))
    finally:
        stack.stop()
        if os.environ.get("MEMGATE_KEEP_CHAOS_DATA"):
            print(f"chaos: data and logs kept in {data_dir}", file=sys.stderr)
        else:
            shutil.rmtree(data_dir, ignore_errors=True)
    print("chaos: PASS" if ok else "chaos: FAIL", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
