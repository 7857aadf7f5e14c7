"""Cursor pagination for every list endpoint: `{items, next_cursor}` (SPEC §12)."""

from __future__ import annotations

import base64
from collections.abc import Callable
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
