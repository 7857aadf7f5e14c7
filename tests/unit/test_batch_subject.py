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
