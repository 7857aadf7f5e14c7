"""Structured JSON logs (structlog) on stderr, with the request's trace_id when bound.

Log lines carry ids, decisions and codes, never user text (docs/gate.md#secrets-never-rest):
an exception is logged as its type and frames, without its message (asyncpg, pydantic and
json errors quote the values they failed on), uvicorn's own loggers go through the same
handler, and a last processor redacts any secret that still reaches a line.
"""

from __future__ import annotations

import logging
import os
import sys
import traceback
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import structlog
from structlog.types import EventDict

from app.clean import CleanStrings
from app.memory.detectors import contains_secret, redact

_FRAMES = 6
_SEP = os.sep


def describe_exception(exc: BaseException) -> str:
    """`module.Type at file:line in function < …` for an exception and its causes: where
    it happened, never what it said."""
    parts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(parts) < 4:
        seen.add(id(current))
        # memgate's own frames (where in our code), then the innermost one (what raised)
        stack = traceback.extract_tb(current.__traceback__)
        ours = [
            f
            for f in stack[:-1]
            if f"{_SEP}app{_SEP}" in f.filename or f"{_SEP}workers{_SEP}" in f.filename
        ][-(_FRAMES - 1) :]
        where = " < ".join(
            f"{Path(f.filename).name}:{f.lineno} in {f.name}"
            for f in reversed([*ours, *stack[-1:]])
        )
        kind = type(current)
        parts.append(f"{kind.__module__}.{kind.__qualname__}" + (f" at {where}" if where else ""))
        current = current.__cause__ or current.__context__
    return " | from ".join(parts)


def _exception_of(exc_info: Any) -> BaseException | None:
    if isinstance(exc_info, BaseException):
        return exc_info
    if (
        isinstance(exc_info, tuple)
        and len(exc_info) == 3
        and isinstance(exc_info[1], BaseException)
    ):
        return exc_info[1]
    if exc_info is True:
        return sys.exc_info()[1]
    return None


def safe_exc_info(_: Any, __: str, event_dict: MutableMapping[str, Any]) -> EventDict:
    """Replace `exc_info` by the exception's type and frames (no message, no locals)."""
    exc = _exception_of(event_dict.pop("exc_info", None))
    event_dict.pop("exception", None)
    event_dict.pop("stack_info", None)
    if exc is not None:
        event_dict["exception"] = describe_exception(exc)
    return event_dict


# Strings found clean lately (a request's log line repeats its method, route, status and
# level; its latency takes a few hundred values): checked once, not on every line.
_CLEAN_MAX = 8192
_clean = CleanStrings(contains_secret, _CLEAN_MAX)


def _scrub_text(value: str) -> str:
    return redact(value) if _clean.holds(value) else value


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        return _scrub_text(value)
    if isinstance(value, dict):
        return {k: _scrub(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_scrub(v) for v in value]
    return value


# What the logging itself writes: the time (TimeStamper) and the level name. Nothing of a
# caller's reaches them, and checking a fresh timestamp on every line cost ~150 µs.
_OWN_FIELDS = frozenset({"timestamp", "level"})


def scrub_secrets(_: Any, __: str, event_dict: MutableMapping[str, Any]) -> EventDict:
    """The last line of defence: a secret that reached a log line anyway is redacted."""
    return {
        # `_record` and friends: structlog's own
        k: v if k.startswith("_") or k in _OWN_FIELDS else _scrub(v)
        for k, v in event_dict.items()
    }


def configure_logging(level: str = "INFO") -> None:
    shared: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        safe_exc_info,
        scrub_secrets,
    ]
    structlog.configure(
        processors=[*shared, structlog.processors.JSONRenderer()],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processor=structlog.processors.JSONRenderer(), foreign_pre_chain=shared
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # uvicorn installs plain-text handlers of its own, which print an exception's message
    # ("Exception in ASGI application" + traceback): route its loggers through ours.
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "arq"):
        logger = logging.getLogger(name)
        logger.handlers[:] = []
        logger.propagate = True
    logging.getLogger("uvicorn.access").setLevel(logging.WARNING)
