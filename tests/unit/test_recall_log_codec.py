"""The recall log's Redis payload (app.recall._encode / _decode): what a recall pushes to
the shared list is read back as the same entry, whatever UUID type its ids carry."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import orjson
import pytest
from asyncpg.pgproto.pgproto import UUID as PgUUID

from app.recall import _decode, _encode
from app.store.recall import LogEntry


def _entry(**over: object) -> LogEntry:
    fields: dict[str, object] = {
        "tenant_id": PgUUID(uuid.uuid4().bytes),  # as asyncpg hands ids back
        "trace_id": "tr-1",
        "user_id": "u1",
        "scope": None,
        "fact_ids": [PgUUID(uuid.uuid4().bytes), uuid.uuid4()],
        "detail": {"facts": [{"score": 0.5, "channels": ["dense", "keyword"]}], "n": [1, 2]},
        "tokens": 42,
        "tier": "continue",
        "at": datetime(2026, 12, 6, 2, 40, 28, 133114, tzinfo=UTC),
    }
    fields.update(over)
    return LogEntry(**fields)  # type: ignore[arg-type]


def test_an_entry_round_trips_through_its_payload() -> None:
    entry = _entry()
    raw = _encode(entry)
    doc = orjson.loads(raw)
    assert doc["tenant_id"] == str(entry.tenant_id)
    assert doc["fact_ids"] == [str(i) for i in entry.fact_ids]
    assert doc["at"] == "2026-12-06T02:40:28.133114+00:00"
    assert _decode(raw) == entry


def test_the_payload_does_not_share_the_entry_detail() -> None:
    entry = _entry()
    raw = _encode(entry)
    entry.detail["n"].append(3)  # type: ignore[attr-defined]
    assert orjson.loads(raw)["detail"]["n"] == [1, 2]


def test_a_value_that_is_not_json_is_refused_as_before() -> None:
    # submit() keeps such an entry in this process (TypeError), never a str() of it
    with pytest.raises(TypeError):
        _encode(_entry(detail={"odd": {1, 2}}))
