"""What the sync and async clients share: a call's description, the retry policy and the
exchange itself as a generator without I/O (it yields what to send or how long to wait;
each client only performs those two things with its own transport)."""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import httpx
from pydantic import BaseModel

from memgate_client.errors import MemgateConnectionError, error_from, retry_after

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)

# Methods the server may run twice without harm: reads, and PUT (it sets a whole value).
SAFE_METHODS = frozenset({"GET", "HEAD", "PUT"})
# Writes that take an Idempotency-Key (docs/api.md#idempotency).
KEYED_METHODS = frozenset({"POST", "PATCH", "DELETE"})


@dataclass(frozen=True)
class RetryPolicy:
    """When and how long to wait before trying a call again.

    429 and 503 are retried for every call (the server did nothing: it refused first),
    waiting `Retry-After` when the answer has it, unless it asks for longer than
    `max_retry_after` (then the error is raised at once, with `retry_after` on it). A
    connection error is retried only for a call safe to repeat: a read, a PUT, or a write
    carrying an Idempotency-Key (every write this client sends does). Without Retry-After
    the wait is exponential with full jitter: uniform in [0, min(max_backoff, base × 2^n)].
    `on_retry(attempt, delay, reason)` is called before each wait (for logs and metrics).
    """

    max_attempts: int = 4
    backoff_base: float = 0.25
    max_backoff: float = 8.0
    max_retry_after: float = 30.0
    retry_statuses: frozenset[int] = frozenset({429, 503})
    on_retry: Callable[[int, float, str], None] | None = None

    def backoff(self, attempt: int) -> float:
        return random.uniform(0.0, min(self.max_backoff, self.backoff_base * 2 ** (attempt - 1)))


@dataclass(frozen=True)
class Call(Generic[T]):
    """One logical API call: the request and how to read its success."""

    method: str
    path: str
    parse: Callable[[httpx.Response], T]
    params: Mapping[str, Any] | None = None
    json: Any = None
    content: bytes | None = None
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Attempt:
    """What a client sends once (the same Idempotency-Key on every attempt of a call)."""

    method: str
    path: str
    params: dict[str, Any] | None
    json: Any
    content: bytes | None
    headers: dict[str, str]


def prepare(call: Call[Any], idempotency_key: str | None = None) -> Attempt:
    """The request of every attempt: a write gets one Idempotency-Key for the whole call —
    the caller's, else a new random one — so a retry replays the first answer."""
    headers = dict(call.headers)
    if call.method in KEYED_METHODS:
        headers.setdefault("Idempotency-Key", idempotency_key or f"mgc-{uuid.uuid4().hex}")
    params = {k: _param(v) for k, v in (call.params or {}).items() if v is not None} or None
    if call.content is not None:
        headers.setdefault("Content-Type", "application/x-ndjson")
    return Attempt(call.method, call.path, params, call.json, call.content, headers)


def _param(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


def exchange(
    attempt: Attempt, policy: RetryPolicy
) -> Generator[Attempt | float, httpx.Response | None, httpx.Response]:
    """Send `attempt` until it succeeds, fails for good, or attempts run out.

    Yields an Attempt to send (the client sends it and sends back the response, or throws
    the transport error in) or a float of seconds to sleep. Returns the final response
    (a 2xx or an error answer not worth retrying); raises MemgateConnectionError.
    """
    safe = attempt.method in SAFE_METHODS or "Idempotency-Key" in attempt.headers
    n = 0
    while True:
        n += 1
        try:
            response = yield attempt
        except httpx.TransportError as exc:
            if not safe or n >= policy.max_attempts:
                raise MemgateConnectionError(f"{attempt.method} {attempt.path}: {exc!r}") from exc
            delay, reason = policy.backoff(n), type(exc).__name__
        else:
            assert response is not None
            if response.status_code not in policy.retry_statuses or n >= policy.max_attempts:
                return response
            wait = retry_after(response)
            if wait is not None and wait > policy.max_retry_after:
                return response
            delay = wait if wait is not None else policy.backoff(n)
            reason = str(response.status_code)
        if policy.on_retry is not None:
            policy.on_retry(n, delay, reason)
        yield delay


def decode(call: Call[T], response: httpx.Response) -> T:
    if response.is_success:
        return call.parse(response)
    raise error_from(response)


def model(cls: type[M]) -> Callable[[httpx.Response], M]:
    def parse(response: httpx.Response) -> M:
        return cls.model_validate_json(response.content)

    return parse


def body(value: BaseModel | Mapping[str, Any] | None) -> Any:
    """A request body: a model as JSON with only the fields set, a mapping as it is."""
    if value is None:
        return None
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_unset=True, by_alias=True)
    return dict(value)
