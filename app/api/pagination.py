"""Cursor pagination for every list endpoint: `{items, next_cursor}` (SPEC §12)."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any

import orjson
from fastapi import Query

from app.errors import InvalidRequest

DEFAULT_LIMIT = 50
MAX_LIMIT = 200

Limit = Annotated[int, Query(ge=1, le=MAX_LIMIT)]


def encode_cursor(position: Any) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(position)).decode().rstrip("=")


def decode_cursor(cursor: str | None) -> Any:
    if not cursor:
        return None
    try:
        return orjson.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, orjson.JSONDecodeError) as exc:
        raise InvalidRequest("invalid cursor", {"fields": [{"loc": ["query", "cursor"]}]}) from exc


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
        return datetime.fromisoformat(position[0]), uuid.UUID(position[1])
    except (TypeError, ValueError, IndexError, KeyError) as exc:
        raise InvalidRequest("invalid cursor", {"fields": [{"loc": ["query", "cursor"]}]}) from exc
