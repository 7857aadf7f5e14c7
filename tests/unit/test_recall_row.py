"""The recall statement's rows as candidates (app.store.recall._row): a record is unpacked
by position, so the parameters of `_row` must be the statement's columns, in order."""

from __future__ import annotations

import inspect
import re
import uuid
from datetime import UTC, datetime

from app.memory.model import FactType, SourceKind
from app.memory.scoring import RecallRow
from app.store import recall as store


def _columns() -> list[str]:
    return [c.split()[0] for c in store._RECALL_COLUMNS.replace("\n", " ").split(",")]


def test_row_takes_the_statements_columns_in_order() -> None:
    params = [p.lstrip("_") for p in inspect.signature(store._row).parameters]
    assert params == _columns()
    # the outer SELECT of the statement (also run as it stands without the function)
    select = store.RECALL_SQL.rsplit("\nSELECT ", 1)[1].split("\nFROM state st", 1)[0]
    assert [re.sub(r"^\w+\.", "", c.strip()) for c in select.split(",")] == _columns()


def test_row_reads_what_a_lookup_by_name_read() -> None:
    ids = [uuid.uuid4() for _ in range(3)]
    at = datetime(2026, 12, 1, tzinfo=UTC)
    for prev_id, next_id in [(None, None), (ids[1], None), (None, ids[2]), (ids[1], ids[2])]:
        values = {
            "last_interaction_at": at,
            "last_session_hint": "hint",
            "pool_size": 12,
            "bm25_ideal": 3.5,
            "id": ids[0],
            "statement": "User likes tea",
            "predicate": "drink",
            "value": {"v": 1},
            "type": "episodic",
            "scope": "global",
            "source_kind": "user_message",
            "confidence": 0.7,
            "valid_from": at,
            "occurred_at": None,
            "last_observed_at": at,
            "created_at": at,
            "contested": False,
            "evidence_head": "Caroline: hi",
            "structured": True,
            "cosine": 0.5,
            "bm25": None,
            "recency_rank": 3,
            "prev_id": prev_id,
            "next_id": next_id,
        }
        got = store._row(*(values[c] for c in _columns()))
        assert got == RecallRow(
            id=ids[0],
            statement="User likes tea",
            predicate="drink",
            value={"v": 1},
            type=FactType.EPISODIC,
            scope="global",
            source_kind=SourceKind.USER_MESSAGE,
            confidence=0.7,
            valid_from=at,
            occurred_at=None,
            last_observed_at=at,
            created_at=at,
            contested=False,
            evidence_head="Caroline: hi",
            structured=True,
            cosine=0.5,
            bm25=None,
            recency_rank=3,
            neighbours=tuple(n for n in (prev_id, next_id) if n is not None),
        )
        assert type(got.type) is FactType and type(got.source_kind) is SourceKind
