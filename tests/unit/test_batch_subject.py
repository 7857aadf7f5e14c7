"""`app.writer._FreeSubject`: the free statements a batch wrote so far, ranked as the
conflict pool would rank them."""

from __future__ import annotations

import uuid

from app.writer import _FreeSubject


def test_a_fact_without_a_vector_first_does_not_blind_the_later_ones() -> None:
    """The first fact of a group had no vector (its embedding failed): the next fact's
    vector still counts, as the database's `<=>` would see it."""
    group = _FreeSubject()
    blind, seen = uuid.uuid4(), uuid.uuid4()
    vector = [0.1] * 512
    group.add(blind, "one", None, "usem3-512")
    group.add(seen, "two", vector, "usem3-512")
    ranked = {
        fact_id: distance for _, distance, fact_id in group.ranked("three", vector, "usem3-512", 20)
    }
    assert ranked[blind] is None
    assert ranked[seen] is not None and abs(ranked[seen]) < 1e-9


def test_direct_writes_go_first_only_past_other_subjects() -> None:
    """`app.writer._direct_first`: the explicit instructions of a batch of jobs go first as
    one run when none of them passes a pooled remark of its own subject; otherwise the
    batch keeps its order."""
    from datetime import UTC, datetime

    from app.memory.model import Candidate, FactType, KeyRights, Role, SourceKind
    from app.memory.policy import Policy
    from app.memory.semantic import Assessment
    from app.writer import Embedded, Extracted, _direct_first

    policy, at = Policy(), datetime(2026, 1, 1, tzinfo=UTC)
    rights = KeyRights(None, Role.AGENT)
    ready = Embedded(Assessment.disabled("test"))

    def item(user: str, explicit: bool, predicate: str | None = None) -> Extracted:
        kind = SourceKind.EXPLICIT_INSTRUCTION if explicit else SourceKind.USER_MESSAGE
        c = Candidate(user, FactType.SEMANTIC, "s", predicate=predicate, source_kind=kind)
        return Extracted(rights, c, policy, at, f"{user}:t", ready if explicit else None)

    # job after job, each "记住…" then a remark for the pool: other users' remarks are passed
    mixed = [item("a", True), item("a", False), item("b", True), item("b", False)]
    assert _direct_first(mixed) == [0, 2, 1, 3]
    # user a's second instruction would pass a's own pooled remark (free statements of one
    # type are one subject): the order stays
    same = [item("a", True), item("a", False), item("a", True)]
    assert _direct_first(same) is None
    # another predicate is another subject
    other = [item("a", True, "desk"), item("a", False, "editor"), item("a", True, "desk")]
    assert _direct_first(other) == [0, 2, 1]
    # nothing to gain: one instruction, or no pooled remark
    assert _direct_first([item("a", True), item("b", False)]) is None
    assert _direct_first([item("a", True), item("b", True)]) is None
