"""The one clock (docs/architecture.md#time).

Production reads real UTC time. With MEMGATE_ENV=test, a test may shift time for the
whole process (MEMGATE_TEST_CLOCK_OFFSET seconds) or for one request (header
`X-Memgate-Now: <ISO-8601>`); both are refused or ignored in any other environment.
"""

from __future__ import annotations

import contextvars
from datetime import UTC, datetime, timedelta

from app.config import get_settings

_override: contextvars.ContextVar[datetime | None] = contextvars.ContextVar(
    "memgate_now", default=None
)


def now() -> datetime:
    fixed = _override.get()
    if fixed is not None:
        return fixed
    settings = get_settings()
    real = datetime.now(UTC)
    if settings.env == "test" and settings.clock_offset_s:
        return real + timedelta(seconds=settings.clock_offset_s)
    return real


def set_request_now(value: datetime | None) -> contextvars.Token[datetime | None]:
    """Pin the clock for the current task (test environment only; callers check)."""
    return _override.set(value)


def reset_request_now(token: contextvars.Token[datetime | None]) -> None:
    _override.reset(token)


def test_clock_enabled() -> bool:
    return get_settings().env == "test"
