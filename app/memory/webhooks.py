"""Webhooks, the pure part (docs/webhooks.md): the event vocabulary, what a payload may
carry, the Standard Webhooks signature, the retry schedule and the URL rules.

Payloads carry ids and metadata only: never a statement, a value or evidence (of any fact,
sensitive or not) and never a secret; a predicate only of a `normal` fact (one of a
sensitive category, `health_condition`, says too much by itself).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

FACT_WRITTEN = "fact.written"
FACT_SUPERSEDED = "fact.superseded"
FACT_DELETED = "fact.deleted"
CANDIDATE_PROMOTED = "candidate.promoted"
USER_FORGOTTEN = "user.forgotten"
JOB_FAILED = "job.failed"
EVENT_TYPES = (
    FACT_WRITTEN,
    FACT_SUPERSEDED,
    FACT_DELETED,
    CANDIDATE_PROMOTED,
    USER_FORGOTTEN,
    JOB_FAILED,
)
SECRET_PREFIX = "whsec_"


@dataclass(frozen=True)
class WebhookEvent:
    """One event, before it is fanned out to the endpoints subscribed to its type."""

    type: str
    user_id: str | None
    data: dict[str, Any] = field(default_factory=dict)

    def row(self, at: datetime, seed: uuid.UUID) -> dict[str, Any]:
        """As the outbox insert reads it: type, user, the body every endpoint gets, and a
        random `seed` from which each endpoint's delivery id is derived."""
        return {
            "seed": str(seed),
            "type": self.type,
            "user_id": self.user_id,
            "payload": {"type": self.type, "timestamp": at.isoformat(), "data": self.data},
        }


def _ids(ids: list[uuid.UUID] | list[str]) -> list[str]:
    return [str(i) for i in ids]


def fact_written(
    fact_id: uuid.UUID,
    user_id: str,
    *,
    scope: str,
    fact_type: str,
    predicate: str | None,
    sensitivity: str,
    status: str,
    source_kind: str,
    decision: str,
    version: int,
    supersedes: uuid.UUID | None,
    superseded: list[str],
    candidate_id: uuid.UUID | None = None,
) -> WebhookEvent:
    return WebhookEvent(
        FACT_WRITTEN,
        user_id,
        {
            "fact_id": str(fact_id),
            "user_id": user_id,
            "scope": scope,
            "fact_type": fact_type,
            "predicate": visible_predicate(predicate, sensitivity),
            "sensitivity": sensitivity,
            "status": status,
            "source_kind": source_kind,
            "decision": decision,
            "version": version,
            "supersedes": str(supersedes) if supersedes else None,
            "superseded": list(superseded),
            "candidate_id": str(candidate_id) if candidate_id else None,
        },
    )


def fact_superseded(fact_id: str, user_id: str, by_fact_id: uuid.UUID | None) -> WebhookEvent:
    return WebhookEvent(
        FACT_SUPERSEDED,
        user_id,
        {
            "fact_id": fact_id,
            "user_id": user_id,
            "superseded_by": str(by_fact_id) if by_fact_id else None,
        },
    )


def fact_deleted(
    fact_id: uuid.UUID, user_id: str, *, reason: str, version_ids: list[uuid.UUID]
) -> WebhookEvent:
    return WebhookEvent(
        FACT_DELETED,
        user_id,
        {
            "fact_id": str(fact_id),
            "user_id": user_id,
            "reason": reason,
            "version_ids": _ids(version_ids),
        },
    )


def candidate_promoted(
    candidate_id: uuid.UUID, user_id: str, fact_id: uuid.UUID | None, decision: str, by_user: bool
) -> WebhookEvent:
    return WebhookEvent(
        CANDIDATE_PROMOTED,
        user_id,
        {
            "candidate_id": str(candidate_id),
            "user_id": user_id,
            "fact_id": str(fact_id) if fact_id else None,
            "decision": decision,
            "confirmed_by_user": by_user,
        },
    )


def user_forgotten(user_id: str, counts: dict[str, int]) -> WebhookEvent:
    return WebhookEvent(USER_FORGOTTEN, user_id, {"user_id": user_id, "erased": dict(counts)})


def job_failed(
    job_id: uuid.UUID, kind: str, user_id: str | None, error_code: str, attempts: int
) -> WebhookEvent:
    return WebhookEvent(
        JOB_FAILED,
        user_id,
        {
            "job_id": str(job_id),
            "kind": kind,
            "user_id": user_id,
            "error_code": error_code,
            "attempts": attempts,
        },
    )


def visible_predicate(predicate: str | None, sensitivity: str) -> str | None:
    return predicate if sensitivity == "normal" else None


# ------------------------------------------------------------------------------ signing


def secret_key(secret: str) -> bytes:
    """The HMAC key of a `whsec_<base64>` secret."""
    if not secret.startswith(SECRET_PREFIX):
        raise ValueError("not a webhook secret")
    return base64.b64decode(secret[len(SECRET_PREFIX) :])


def signature(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """`v1,<base64 HMAC-SHA256 of "id.timestamp.body">` (Standard Webhooks)."""
    signed = f"{msg_id}.{timestamp}.".encode() + body
    digest = hmac.new(secret_key(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def signature_header(secrets: list[str], msg_id: str, timestamp: int, body: bytes) -> str:
    """Every current secret's signature, space-separated: during a rotation's grace the
    receiver may hold either secret."""
    return " ".join(signature(s, msg_id, timestamp, body) for s in secrets)


def message_id(delivery_id: uuid.UUID) -> str:
    return f"msg_{delivery_id.hex}"


# ------------------------------------------------------------------------------ retries


def retry_delay_s(attempt: int, base_s: float, cap_s: float, jitter: float) -> float:
    """Exponential backoff after the `attempt`-th failure (1-based), with jitter in
    [0.75, 1.25) of the delay for `jitter` in [0, 1)."""
    delay: float = min(cap_s, base_s * 2 ** max(0, attempt - 1))
    return delay * (0.75 + jitter / 2)


def error_code(status: int | None, exc: BaseException | None) -> str:
    """What an attempt's failure is called on the delivery row: never a response body."""
    if status is not None:
        return f"http_{status}"
    name = type(exc).__name__ if exc is not None else "error"
    if "Timeout" in name:
        return "timeout"
    if "Connect" in name:
        return "connect_error"
    return "request_error"


# ------------------------------------------------------------------------------ URLs


def url_problem(url: str, *, require_https: bool) -> str | None:
    """Why this endpoint URL is refused (None: acceptable as written; its host's
    addresses are checked apart, see `address_refused`)."""
    if len(url) > 2000:
        return "too long"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError:
        return "not a URL"
    if parts.scheme not in ("https", "http"):
        return "scheme must be https"
    if require_https and parts.scheme != "https":
        return "scheme must be https"
    if not parts.hostname:
        return "no host"
    if parts.username or parts.password:
        return "credentials in the URL"
    if parts.fragment:
        return "a fragment"
    return None


def pinned_target(url: str, address: str) -> tuple[str, dict[str, str], dict[str, str]]:
    """The request that reaches `url`'s host at `address` and nowhere else: (URL with the
    address in place of the host, headers, httpx extensions). The address is the one the
    SSRF check resolved and approved, so no second DNS lookup happens between the check
    and the connection (a rebinding answer cannot slip in). `Host` keeps the name, and on
    https the TLS handshake sends it as SNI and verifies the certificate against it."""
    parts = urlsplit(url)
    # the name as DNS and TLS see it: an internationalised name as its A-labels (punycode)
    name = (parts.hostname or "").encode("idna").decode("ascii")
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    literal = f"[{ip}]" if isinstance(ip, ipaddress.IPv6Address) else str(ip)
    netloc = literal if parts.port is None else f"{literal}:{parts.port}"
    host = name if ":" not in name else f"[{name}]"
    headers = {"host": host if parts.port is None else f"{host}:{parts.port}"}
    extensions = {"sni_hostname": name} if parts.scheme == "https" else {}
    return parts._replace(netloc=netloc).geturl(), headers, extensions


def address_refused(address: str) -> bool:
    """A loopback, private, link-local, multicast, reserved or unspecified address: an
    endpoint there would let a tenant reach the service's own network (SSRF)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return True
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(ip)
        if embedded is not None:
            ip = embedded
    return not ip.is_global or ip.is_multicast


_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_V4_COMPAT = ipaddress.ip_network("::/96")
_SIIT = ipaddress.ip_network("::ffff:0:0:0/96")


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one stands for, where a kernel or a gateway translates it
    (mapped, 6to4, NAT64, IPv4-compatible, SIIT): judged as that IPv4 address."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64 or ip in _SIIT or (ip in _V4_COMPAT and int(ip) > 1):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None
