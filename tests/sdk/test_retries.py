"""Retries on 429/503 honouring Retry-After, over a real loopback socket to a small fake
server: the live service rate-limits and sheds load only per process and by environment
(MEMGATE_RATE_LIMIT_RPS, MEMGATE_QUEUE_MAX_DEPTH), so these answers are scripted here —
in the service's own envelope and headers (docs/api.md#errors)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from memgate_client import (
    AsyncClient,
    Client,
    ConflictError,
    OverloadedError,
    RateLimitedError,
    RetryPolicy,
    UnavailableError,
)

REFUSED = {
    "decision": "rejected",
    "reason": "transient",
    "detail": None,
    "fact": None,
    "superseded": None,
    "candidate": None,
}


def envelope(code: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": code.replace("_", " "), "details": {}}}


@dataclass
class Scripted:
    """Answers in order (the last one repeats); every request it got."""

    url: str = ""
    answers: list[tuple[int, dict[str, str], dict[str, Any]]] = field(default_factory=list)
    seen: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)


@pytest.fixture
def fake() -> Iterator[Scripted]:
    script = Scripted()

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            script.seen.append((self.command, self.path, dict(self.headers)))
            index = min(len(script.seen), len(script.answers)) - 1
            status, headers, body = script.answers[index]
            data = json.dumps(body).encode()
            self.send_response(status)
            for k, v in {"Content-Type": "application/json", **headers}.items():
                self.send_header(k, v)
            self.send_header("X-Trace-Id", f"trace-{len(script.seen)}")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = _answer

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    script.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield script
    finally:
        server.shutdown()
        server.server_close()


def recorder() -> tuple[RetryPolicy, list[tuple[int, float, str]]]:
    waits: list[tuple[int, float, str]] = []
    return RetryPolicy(max_attempts=3, on_retry=lambda *a: waits.append(a)), waits


def test_429_waits_retry_after_then_succeeds_with_the_same_key(fake: Scripted) -> None:
    fake.answers = [(429, {"Retry-After": "1"}, envelope("rate_limited")), (200, {}, REFUSED)]
    policy, waits = recorder()
    with Client(fake.url, "mgk_test", retry=policy) as mg:
        answer = mg.write_fact("u1", {"type": "semantic", "statement": "x"})
    assert answer.decision == "rejected"
    assert waits == [(1, 1.0, "429")]  # exactly the server's Retry-After
    assert [s[:2] for s in fake.seen] == [("POST", "/v1/users/u1/facts")] * 2
    keys = [s[2]["Idempotency-Key"] for s in fake.seen]
    assert keys[0] == keys[1] and keys[0].startswith("mgc-")


def test_retry_after_over_the_cap_raises_at_once(fake: Scripted) -> None:
    fake.answers = [(429, {"Retry-After": "120"}, envelope("rate_limited"))]
    policy, waits = recorder()
    with Client(fake.url, "mgk_test", retry=policy) as mg, pytest.raises(RateLimitedError) as e:
        mg.list_facts("u1")
    assert e.value.retry_after == 120 and e.value.status == 429 and e.value.trace_id == "trace-1"
    assert waits == [] and len(fake.seen) == 1


async def test_async_503_overloaded_until_attempts_run_out(fake: Scripted) -> None:
    fake.answers = [(503, {"Retry-After": "0"}, envelope("overloaded"))]
    policy, waits = recorder()
    async with AsyncClient(fake.url, "mgk_test", retry=policy) as mg:
        with pytest.raises(OverloadedError) as e:
            await mg.observe("u1", [{"role": "user", "content": "hello"}])
    assert e.value.code == "overloaded" and len(fake.seen) == 3
    assert [w[:2] for w in waits] == [(1, 0.0), (2, 0.0)]
    assert len({s[2]["Idempotency-Key"] for s in fake.seen}) == 1


async def test_async_503_without_retry_after_backs_off_with_jitter(fake: Scripted) -> None:
    fake.answers = [(503, {}, envelope("unavailable")), (200, {}, {"status": "ok"})]
    waits: list[tuple[int, float, str]] = []
    policy = RetryPolicy(backoff_base=0.05, max_backoff=0.05, on_retry=lambda *a: waits.append(a))
    async with AsyncClient(fake.url, "mgk_test", retry=policy) as mg:
        assert (await mg.healthz()).status == "ok"
    assert len(waits) == 1 and 0.0 <= waits[0][1] <= 0.05 and waits[0][2] == "503"


def test_other_errors_are_not_retried(fake: Scripted) -> None:
    fake.answers = [(409, {"Retry-After": "0"}, envelope("conflict"))]
    with Client(fake.url, "mgk_test") as mg, pytest.raises(ConflictError):
        mg.write_fact("u1", {"type": "semantic", "statement": "x"})
    assert len(fake.seen) == 1


def test_max_attempts_one_never_retries(fake: Scripted) -> None:
    fake.answers = [(503, {"Retry-After": "0"}, envelope("unavailable"))]
    with Client(fake.url, "mgk_test", retry=RetryPolicy(max_attempts=1)) as mg:
        with pytest.raises(UnavailableError):
            mg.healthz()
    assert len(fake.seen) == 1
