"""Cursor pagination for every list endpoint: `{items, next_cursor}`
(docs/api.md#lists-and-pagination)."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, Any

import orjson
from fastapi import Query

from app.api.validation import MAX_YEAR, MIN_YEAR
from app.errors import InvalidRequest

DEFAULT_LIMIT = 50
MAX_LIMIT = 200

MAX_CURSOR = 512

Limit = Annotated[int, Query(ge=1, le=MAX_LIMIT)]
# Opaque: a cursor the server did not hand out answers 422 invalid_request.
Cursor = Annotated[
    str | None,
    Query(
        max_length=MAX_CURSOR,
        pattern=r"^[A-Za-z0-9_-]*$",
        description="next_cursor of the previous page (opaque)",
    ),
]


def encode_cursor(position: Any) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(position)).decode().rstrip("=")


def _bad_cursor() -> InvalidRequest:
    return InvalidRequest(
        "invalid cursor", {"fields": [{"loc": ["query", "cursor"], "msg": "not a cursor"}]}
    )


def decode_cursor(cursor: str | None) -> Any:
    if not cursor:
        return None
    try:
        return orjson.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, TypeError, orjson.JSONDecodeError) as exc:
        raise _bad_cursor() from exc


def decode_int_cursor(cursor: str | None) -> int | None:
    """A cursor over a bigint id (the audit trail)."""
    position = decode_cursor(cursor)
    if position is None:
        return None
    if isinstance(position, bool) or not isinstance(position, int) or not 0 <= position < 2**63:
        raise _bad_cursor()
    return position


def decode_uuid_cursor(cursor: str | None) -> uuid.UUID | None:
    position = decode_cursor(cursor)
    if position is None:
        return None
    try:
        return uuid.UUID(position)
    except (TypeError, ValueError, AttributeError) as exc:
        raise _bad_cursor() from exc


def page(
    rows: list[Any], limit: int, position_of: Callable[[Any], Any], to_json: Callable[[Any], Any]
) -> dict[str, Any]:
    """`rows` fetched with limit+1: trims, renders, and sets next_cursor (None at the end)."""
    kept = rows[:limit]
    more = len(rows) > limit
    next_cursor = encode_cursor(position_of(kept[-1])) if more and kept else None
    return {"items": [to_json(r) for r in kept], "next_cursor": next_cursor}


def decode_time_id_cursor(cursor: str | None) -> tuple[datetime, uuid.UUID] | None:
    """A cursor over (created_at, id), newest first: the position of most lists here."""
    position = decode_cursor(cursor)
    if position is None:
        return None
    try:
        at, key = position
        when = datetime.fromisoformat(at)
        if when.tzinfo is None or not MIN_YEAR <= when.year <= MAX_YEAR:
            raise ValueError("not a position")
        return when.astimezone(UTC), uuid.UUID(key)
    except (TypeError, ValueError, AttributeError) as exc:
        raise _bad_cursor() from exc
