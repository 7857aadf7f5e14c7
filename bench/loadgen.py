"""The load generator: its own process, a lean asyncio HTTP/1.1 client on loopback.

    python -m bench.loadgen CONFIG.json   → prints one JSON result on stdout

Bounded in count and in time: every run stops at `requests` or `duration` seconds,
whichever comes first, and the whole process at `hard_timeout`. `concurrency` workers,
each with its own keep-alive connection, send one request at a time and time it on the
client side (perf_counter around the full request/response).

The client is a few dozen lines over asyncio streams rather than httpx: on a 2-core box
the load generator shares the CPU with the server, and httpx spent ~1.4 ms of CPU per
request (as much as the server's own Python work), so it measured itself as much as the
API. This one spends ~0.2 ms; the figure is reported as `client_cpu_ms_per_request`.

Every recall query is unique (a counter and random words are part of the text), so the
API's query-embedding LRU never hits: each recall pays for a real embedding.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import random
import resource
import socket
import sys
import time
from typing import Any
from urllib.parse import urlsplit

# Questions people ask an assistant with memory, in both languages.
ZH_QUESTIONS = [
    "我对什么过敏？",
    "我住在哪个城市",
    "推荐一家我会喜欢的餐厅",
    "我的订单{o}现在到哪了",
    "我们团队用什么技术栈",
    "周末我一般喜欢做什么",
    "回答的格式我有什么要求",
    "你应该怎么称呼我",
    "帮我寄个快递，用哪家",
    "我在哪家公司上班",
    "上次那个退款处理得怎么样了",
    "写代码前我有什么习惯",
    "帮我订一家酒店",
    "我的饮食有什么忌口",
    "用什么方式联系我比较好",
    "我最近在研究什么",
    "安排一个会议",
    "帮我写一份周报",
    "工单{o}有进展吗",
    "给我做个晚饭的建议",
]
EN_QUESTIONS = [
    "what am I allergic to?",
    "which city do I live in",
    "suggest a restaurant I would like",
    "where is my order {o} now",
    "what stack does my team use",
    "what do I like to do on weekends",
    "how should you format answers for me",
    "what should you call me",
    "which courier should ship this",
    "where do I work",
    "any news on the refund I asked about",
    "what are my coding habits",
    "book me a hotel",
    "do I have dietary restrictions",
    "how do I prefer to be contacted",
    "what have I been studying lately",
    "schedule a meeting for me",
    "draft my weekly report",
    "is there progress on ticket {o}",
    "ideas for dinner tonight",
]
FILLERS_ZH = ["顺便问一下", "麻烦你", "我想确认", "快点告诉我", "今天", "这周", "明天", "现在"]
FILLERS_EN = [
    "quickly",
    "please",
    "by the way",
    "today",
    "this week",
    "tomorrow",
    "right now",
    "again",
]
ACTIVITIES = [
    "跑步",
    "爬山",
    "游泳",
    "读书",
    "做饭",
    "hiking",
    "chess",
    "photography",
    "cycling",
    "jazz",
]


def _order(rng: random.Random) -> str:
    return "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ") for _ in range(3)) + str(
        rng.randrange(100, 1000)
    )


class Queries:
    """Unique, natural-looking recall queries (zh or en) for one process."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.n = 0
        self.tag = f"{seed % 1000:03d}"

    def next(self) -> str:
        self.n += 1
        rng = self.rng
        if rng.random() < 0.5:
            q = rng.choice(ZH_QUESTIONS).format(o=_order(rng))
            return f"{rng.choice(FILLERS_ZH)}，{q}（{self.tag}-{self.n}）"
        q = rng.choice(EN_QUESTIONS).format(o=_order(rng))
        return f"{rng.choice(FILLERS_EN)} {q} ({self.tag}-{self.n})"


def percentile(sorted_values: list[float], p: float) -> float:
    """Nearest-rank percentile of an already sorted list (0 when empty)."""
    if not sorted_values:
        return 0.0
    k = max(0, min(len(sorted_values) - 1, math.ceil(p / 100.0 * len(sorted_values)) - 1))
    return sorted_values[k]


def summarize(
    lat_s: list[float], elapsed: float, errors: int, statuses: dict[str, int]
) -> dict[str, Any]:
    ms = sorted(x * 1000.0 for x in lat_s)
    return {
        "requests": len(ms),
        "errors": errors,
        "statuses": statuses,
        "elapsed_s": round(elapsed, 3),
        "throughput_rps": round(len(ms) / elapsed, 1) if elapsed > 0 else 0.0,
        "p50_ms": round(percentile(ms, 50), 2),
        "p95_ms": round(percentile(ms, 95), 2),
        "p99_ms": round(percentile(ms, 99), 2),
        "mean_ms": round(sum(ms) / len(ms), 2) if ms else 0.0,
        "max_ms": round(ms[-1], 2) if ms else 0.0,
    }


class Job:
    """Builds one request for a mode: (method, path, json body)."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        self.cfg = cfg
        self.mode = cfg["mode"]
        self.users: list[str] = cfg.get("users") or []
        seed = int(cfg.get("seed", os.getpid()))
        self.rng = random.Random(seed * 7919)
        self.queries = Queries(seed)
        self.scope_rate = float(cfg.get("scope_rate", 0.3))
        self.n = 0

    def request(self) -> tuple[str, str, dict[str, Any]]:
        self.n += 1
        rng = self.rng
        user = rng.choice(self.users)
        if self.mode == "recall":
            body: dict[str, Any] = {"query": self.queries.next(), "k": 8, "budget_tokens": 400}
            if rng.random() < self.scope_rate:
                idx = int(user[1:]) if user[1:].isdigit() else 0
                body["scope"] = f"project:p{idx % 97}-{rng.randrange(3)}"
            return "POST", f"/v1/users/{user}/recall", body
        if self.mode == "write":
            what = rng.choice(ACTIVITIES)
            return (
                "POST",
                f"/v1/users/{user}/facts",
                {
                    "type": "semantic",
                    "statement": f"我喜欢在第{self.n}个周末{what}，编号{self.queries.tag}-"
                    f"{rng.randrange(1 << 30)}",
                    "source": {"kind": "explicit_instruction", "trace_id": f"bench-{self.n}"},
                },
            )
        if self.mode == "observe":
            n = self.n
            tag = f"{self.queries.tag}-{n}-{rng.randrange(1 << 20)}"
            turns = [
                {"role": "user", "content": f"记住，我对花生过敏，这很重要（{tag}）"},
                {"role": "assistant", "content": "好的，我记住了。"},
                {
                    "role": "user",
                    "content": f"By the way I moved to Hangzhou last month, ref {tag}",
                },
                {"role": "assistant", "content": "Noted."},
            ]
            return (
                "POST",
                f"/v1/users/{user}/observations",
                {
                    "session_id": f"bench-{tag}",
                    "messages": turns,
                },
            )
        if self.mode == "get":
            return "GET", self.cfg.get("path", "/healthz"), {}
        raise ValueError(f"unknown mode {self.mode}")


class HTTPError(Exception):
    """The connection failed or the server answered something that is not HTTP/1.1."""


class Connection:
    """One HTTP/1.1 keep-alive connection; reconnects after the server closes it."""

    def __init__(self, base_url: str, headers: dict[str, str]) -> None:
        url = urlsplit(base_url)
        self.host = url.hostname or "127.0.0.1"
        self.port = url.port or 80
        fixed = {"Host": f"{self.host}:{self.port}", **headers}
        self.fixed = "".join(f"{k}: {v}\r\n" for k, v in fixed.items())
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def _open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        reader, writer = await asyncio.open_connection(self.host, self.port)
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.reader, self.writer = reader, writer
        return reader, writer

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None

    async def request(self, method: str, path: str, body: bytes | None) -> tuple[int, bytes]:
        try:
            return await self._request(method, path, body)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as e:
            self.close()
            raise HTTPError(repr(e)) from e

    async def _request(self, method: str, path: str, body: bytes | None) -> tuple[int, bytes]:
        if self.writer is None or self.reader is None:
            reader, writer = await self._open()
        else:
            reader, writer = self.reader, self.writer
        head = f"{method} {path} HTTP/1.1\r\n{self.fixed}"
        if body is not None:
            head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        writer.write(head.encode() + b"\r\n" + (body or b""))
        raw = await reader.readuntil(b"\r\n\r\n")
        lines = raw.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        length, chunked, close = None, False, False
        for line in lines[1:]:
            name, _, value = line.partition(":")
            name = name.strip().lower()
            if name == "content-length":
                length = int(value)
            elif name == "transfer-encoding":
                chunked = "chunked" in value.lower()
            elif name == "connection":
                close = value.strip().lower() == "close"
        if chunked:
            parts = []
            while True:
                size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
                data = await reader.readexactly(size + 2)
                if size == 0:
                    break
                parts.append(data[:-2])
            content = b"".join(parts)
        elif length is not None:
            content = await reader.readexactly(length)
        else:  # no length: the body runs to the end of the connection
            content = await reader.read()
            close = True
        if close:
            self.close()
        return status, content


async def run_once(
    conns: list[Connection],
    job: Job,
    concurrency: int,
    max_requests: int,
    duration: float,
    collect: list[Any] | None = None,
) -> dict[str, Any]:
    latencies: list[float] = []
    statuses: dict[str, int] = {}
    errors = 0
    sent = 0
    samples: list[str] = []
    deadline = time.perf_counter() + duration

    async def worker(conn: Connection) -> None:
        nonlocal sent, errors
        while sent < max_requests and time.perf_counter() < deadline:
            sent += 1
            method, path, body = job.request()
            payload = None if method == "GET" else json.dumps(body, ensure_ascii=False).encode()
            t0 = time.perf_counter()
            try:
                status, content = await conn.request(method, path, payload)
                dt = time.perf_counter() - t0
                code = str(status)
                statuses[code] = statuses.get(code, 0) + 1
                if status >= 400:
                    errors += 1
                    if len(samples) < 3:
                        samples.append(f"{code} {content[:300]!r}")
                    continue
                latencies.append(dt)
                if collect is not None:
                    collect.append(json.loads(content))
            except HTTPError as exc:
                errors += 1
                statuses["exc"] = statuses.get("exc", 0) + 1
                if len(samples) < 3:
                    samples.append(repr(exc))

    t0 = time.perf_counter()
    await asyncio.gather(*(worker(conns[i]) for i in range(concurrency)))
    out = summarize(latencies, time.perf_counter() - t0, errors, statuses)
    if samples:
        out["error_samples"] = samples
    return out


async def main_async(cfg: dict[str, Any]) -> dict[str, Any]:
    concurrency = int(cfg.get("concurrency", 1))
    headers = {"Authorization": f"Bearer {cfg['key']}"} if cfg.get("key") else {}
    job = Job(cfg)
    result: dict[str, Any] = {"mode": cfg["mode"], "concurrency": concurrency, "runs": []}
    conns = [Connection(cfg["base_url"], headers) for _ in range(concurrency)]
    try:
        warm = int(cfg.get("warmup", 0))
        collect: list[Any] | None = [] if cfg.get("collect") else None
        if warm:  # warm-up responses are collected too (their jobs exist all the same)
            result["warmup"] = await run_once(conns, job, concurrency, warm, 60.0, collect)
        ru0 = resource.getrusage(resource.RUSAGE_SELF)
        for _ in range(int(cfg.get("runs", 1))):
            result["runs"].append(
                await run_once(
                    conns,
                    job,
                    concurrency,
                    int(cfg.get("requests", 1000)),
                    float(cfg.get("duration", 10.0)),
                    collect,
                )
            )
        ru1 = resource.getrusage(resource.RUSAGE_SELF)
        total = sum(r["requests"] + r["errors"] for r in result["runs"])
        cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
        result["client_cpu_ms_per_request"] = round(cpu * 1000 / total, 3) if total else None
        if collect is not None:
            result["responses"] = collect
    finally:
        for conn in conns:
            conn.close()
    return result


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as fh:
        cfg = json.load(fh)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    try:
        result = asyncio.run(asyncio.wait_for(main_async(cfg), float(cfg.get("hard_timeout", 600))))
    except TimeoutError:
        result = {"mode": cfg.get("mode"), "error": "hard timeout", "runs": []}
    sys.stdout.write(json.dumps(result, ensure_ascii=False))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
