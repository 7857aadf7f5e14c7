"""The pure side of imports (app/memory/imports.py): mem0's documents, a memory as a
candidate, candidates through the job row's JSON, the report's counts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from app.memory.imports import (
    MAX_LABEL,
    Mem0Memory,
    candidate_json,
    candidate_of,
    counts,
    from_mem0,
    mem0_records,
    provenance,
    with_policy_confidence,
)
from app.memory.model import (
    AUTHORITY,
    Candidate,
    FactType,
    Origin,
    Sensitivity,
    SourceKind,
    authority,
)

ONE = {"id": "m1", "memory": "Likes tea", "user_id": "u"}


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ({"results": [ONE]}, [ONE]),  # Memory.get_all()
        ({"count": 1, "next": None, "previous": None, "results": [ONE]}, [ONE]),  # platform
        ({"memories": [ONE]}, [ONE]),
        ([ONE, ONE], [ONE, ONE]),
        ([], []),
        (ONE, None),  # one memory, not a document
        ({"results": "x"}, None),
        ("text", None),
    ],
)
def test_mem0_records(doc: object, expected: list[object] | None) -> None:
    assert mem0_records(doc) == expected


def test_a_mem0_memory_is_an_imported_semantic_fact() -> None:
    created = datetime(2025, 3, 1, 9, 15, tzinfo=timezone(timedelta(hours=-7)))
    updated = created + timedelta(hours=1)
    m = Mem0Memory(id="abc", memory="  Likes tea  ", user_id="u1", hash="h1", created_at=created)
    c = from_mem0(m)
    assert (c.type, c.statement, c.user_id) == (FactType.SEMANTIC, "Likes tea", "u1")
    assert c.source_kind is SourceKind.IMPORTED and c.origin is Origin.IMPORTED
    assert c.predicate is None and c.evidence is None and c.confidence is None
    assert c.turn_id == "mem0:abc#h1" and c.valid_from == created
    assert from_mem0(Mem0Memory("abc", "x", "u", None, created, updated)).valid_from == updated
    assert provenance(Mem0Memory("abc", "x", "u")) == "mem0:abc"
    long = Mem0Memory("i" * 190, "x", "u", hash="h" * 32)
    assert provenance(long) == f"mem0:{'i' * 190}" and len(provenance(long)) <= MAX_LABEL


def test_imported_ranks_with_agent_inference() -> None:
    assert authority(SourceKind.IMPORTED) == authority(SourceKind.AGENT_INFERENCE)
    assert authority(SourceKind.USER_MESSAGE) > authority(SourceKind.IMPORTED)
    assert authority(SourceKind.IMPORTED) > authority(SourceKind.EXTERNAL_CONTENT)
    assert set(AUTHORITY) == set(SourceKind)


def test_policy_confidence_only_fills_an_imported_candidate_without_one() -> None:
    imported = from_mem0(Mem0Memory("a", "x", "u"))
    assert with_policy_confidence(imported, 0.6).confidence == 0.6
    given = Candidate(user_id="u", type=FactType.SEMANTIC, statement="x", confidence=0.9)
    given.source_kind = SourceKind.IMPORTED
    assert with_policy_confidence(given, 0.6).confidence == 0.9
    told = Candidate(user_id="u", type=FactType.SEMANTIC, statement="x")
    told.source_kind = SourceKind.USER_MESSAGE
    assert with_policy_confidence(told, 0.6).confidence is None


def test_a_candidate_survives_the_job_rows_json() -> None:
    at = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
    c = Candidate(
        user_id="u",
        type=FactType.PROFILE,
        statement="The user prefers English",
        value={"lang": "en", "n": [1, 2]},
        predicate="preferred_language",
        scope="project:x",
        source_kind=SourceKind.IMPORTED,
        trace_id="import:1",
        turn_id="ext-1",
        evidence="said so",
        confidence=0.6,
        sensitivity=Sensitivity.PERSONAL,
        valid_from=at,
        valid_to=at + timedelta(days=1),
        ttl_days=30,
        consent=True,
        origin=Origin.IMPORTED,
        occurred_at=at,
        keys=("k1", "k2"),
    )
    assert candidate_of(candidate_json(c)) == c


def test_counts_name_every_decision() -> None:
    assert counts(["written", "rejected", "written"]) == {
        "written": 2,
        "superseded": 0,
        "merged": 0,
        "pending": 0,
        "rejected": 1,
    }
    assert counts(["pass"], ("pass",))["pass"] == 1
    assert counts(["pass"])["pass"] == 1  # an unexpected decision is still counted
