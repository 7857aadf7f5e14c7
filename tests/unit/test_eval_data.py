"""The eval data files are well-formed (issue 7): broken labels fail CI here, fast,
instead of halfway through `make eval`. The full eval is not part of `make test`."""

from __future__ import annotations

from collections import Counter

import pytest

from app.memory.model import Reason
from evals.dataset import (
    MIN_QUERIES,
    MIN_TURNS,
    REASONS,
    Suite,
    load_suite,
    messages_of,
    post_body,
    validate,
)
from evals.metrics import item_matches, value_matches


@pytest.fixture(scope="module")
def suite() -> Suite:
    return load_suite()


def test_data_is_valid(suite: Suite) -> None:
    assert validate(suite) == []


def test_counts(suite: Suite) -> None:
    assert suite.labeled_turns() >= MIN_TURNS
    assert len(suite.queries) >= MIN_QUERIES


def test_ids_unique_across_files(suite: Suite) -> None:
    ids = [c["id"] for c in suite.writes + suite.observations]
    ids += [s["id"] for s in suite.conflicts] + [g["id"] for g in suite.duplicates]
    ids += [q["id"] for q in suite.queries] + [t["id"] for t in suite.tiers]
    dupes = [i for i, n in Counter(ids).items() if n > 1]
    assert dupes == []


def test_every_expected_reason_is_a_spec_reason(suite: Suite) -> None:
    expects = [c["expect"] for c in suite.writes]
    expects += [step["expect"] for s in suite.conflicts for step in s["steps"]]
    reasons = {e["reason"] for e in expects if "reason" in e}
    assert reasons <= REASONS == {r.value for r in Reason}


def test_both_languages_and_every_rule_covered(suite: Suite) -> None:
    for cases in (suite.writes, suite.observations, suite.queries):
        assert {c["lang"] for c in cases} == {"zh", "en"}
    rules = {s["rule"] for s in suite.conflicts}
    assert {
        "explicit_correction",
        "authority",
        "same_source_later",
        "same_source_same_time",
        "same_value",
        "scope",
    } <= rules
    bad = {c["category"] for c in suite.writes + suite.observations if c["gold"] == "bad"}
    assert {"secret", "government_id", "payment_card", "injection", "third_party"} <= bad
    assert {"hypothetical", "question", "mood", "assistant_turn", "external"} <= bad


def test_validation_catches_broken_labels(suite: Suite) -> None:
    broken = load_suite()
    broken.writes = [dict(broken.writes[0], expect={"decision": "rejected", "reason": "nope"})]
    broken.queries = [dict(broken.queries[0], needed=["no.such.key"])]
    problems = validate(broken)
    assert any("SPEC reason code" in p for p in problems)
    assert any("unknown fact key" in p for p in problems)


def test_shorthand_and_matching() -> None:
    body = post_body({"statement": "s", "kind": "user_message"})
    assert body == {"statement": "s", "source": {"kind": "user_message"}, "type": "semantic"}
    assert messages_of({"messages": ["hi", {"role": "assistant", "content": "yo"}]}) == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "yo"},
    ]
    assert value_matches("Markdown_Table ", "markdown table")
    assert value_matches("peanuts", "peanut")
    assert not value_matches("zh", "en")
    item = {"predicate": "tech_stack", "value": "Go 1.22", "statement": "The team uses Go 1.22"}
    assert item_matches(item, {"predicate": "tech_stack", "statement_contains": "go 1.22"})
    assert not item_matches(item, {"predicate": "allergy", "value": "Go 1.22"})
