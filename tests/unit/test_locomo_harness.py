"""The pure parts of `make eval-locomo` (evals/locomo.py): dates, the metric, the split,
loading a LoCoMo-shaped file, the request bodies and the BM25 baseline."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from evals import locomo


def test_parse_date_reads_locomo_and_iso() -> None:
    assert locomo.parse_date("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert locomo.parse_date("10:37 am on 27 June, 2023").day == 27
    assert locomo.parse_date("2024-03-02 19:30") == datetime(2024, 3, 2, 19, 30, tzinfo=UTC)
    with pytest.raises(ValueError):
        locomo.parse_date("yesterday")


def test_evidence_recall_counts_each_evidence_turn_once() -> None:
    ranked = [["D1:1"], ["D1:3", "D1:4"], ["D2:1"]]
    assert locomo.evidence_recall(ranked, ["D1:3", "D2:1"], 1) == 0.0
    assert locomo.evidence_recall(ranked, ["D1:3", "D2:1"], 2) == 0.5
    assert locomo.evidence_recall(ranked, ["D1:3", "D2:1"], 10) == 1.0
    assert locomo.evidence_recall([], ["D1:1"], 10) == 0.0


def test_split_is_fixed_for_the_development_half_and_whole_otherwise() -> None:
    def conv(i: str) -> locomo.Conversation:
        return locomo.Conversation(i, [], [], [])

    dev = [conv(i) for i in ("conv-26", "conv-30", "conv-41", "conv-42", "conv-43")]
    assert locomo.splits(dev) == {
        "tune": ["conv-26", "conv-30", "conv-42"],
        "report": ["conv-41", "conv-43"],
        "all": ["conv-26", "conv-30", "conv-41", "conv-42", "conv-43"],
    }
    assert locomo.splits([conv("conv-1"), conv("conv-2")]) == {"all": ["conv-1", "conv-2"]}
    zh = locomo.splits([conv("zh-01"), conv("zh-02")])
    assert zh["tune"] == ["zh-01"] and zh["report"] == ["zh-02"]


def test_the_chinese_set_loads_with_bodies_and_a_baseline() -> None:
    convs = locomo.load(locomo.ZH_SET)
    assert [c.sample_id for c in convs] == ["zh-01", "zh-02", "zh-03"]
    # zh-01 is tuned on; zh-02 and zh-03 (added held out) are reported
    assert locomo.splits(convs) == {
        "tune": ["zh-01"],
        "report": ["zh-02", "zh-03"],
        "all": ["zh-01", "zh-02", "zh-03"],
    }
    c = convs[0]
    assert len(c.turns) > 150 and c.questions and c.observations
    assert all(q.evidence for q in c.questions)
    bodies = locomo._turn_bodies(c)
    assert len(bodies) == len(c.turns)
    first, second = bodies[0][1], bodies[1][1]
    assert first["type"] == "episodic" and first["keys"] == []
    assert second["keys"] == [c.turns[0].text]  # the turn before, same session
    assert first["occurred_at"] == c.turns[0].date.isoformat()
    assert all(len(b["statement"]) <= locomo.MAX_STATEMENT for _, b in bodies)
    obs = locomo._observation_bodies(c)
    assert obs[0][1]["type"] == "semantic" and obs[0][1]["source"]["turn_id"]
    ranked = locomo.bm25_rankings(c)
    assert set(ranked) == {q.text for q in c.questions}
    assert all(len(r) == locomo.K for r in ranked.values())


def test_split_option_keeps_only_the_tuning_or_the_report_conversations() -> None:
    """`--split tune` must never ingest, ask or print a report conversation."""

    def conv(i: str) -> locomo.Conversation:
        return locomo.Conversation(i, [], [], [])

    dev = [conv(i) for i in ("conv-26", "conv-30", "conv-41", "conv-42", "conv-43", "zh-02")]
    assert [c.sample_id for c in locomo.select_split(dev, "tune")] == [
        "conv-26",
        "conv-30",
        "conv-42",
    ]
    assert [c.sample_id for c in locomo.select_split(dev, "report")] == [
        "conv-41",
        "conv-43",
        "zh-02",
    ]
    assert locomo.select_split(dev, None) == dev
    # the tuning run's own split table then holds tuning conversations only
    assert set(locomo.splits(locomo.select_split(dev, "tune"))) == {"tune", "all"}
    assert locomo.select_split([conv("conv-1")], "tune") == []
    with pytest.raises(ValueError):
        locomo.select_split(dev, "test")


def test_rescore_applies_the_statements_channel_limits() -> None:
    """evals.rescore re-ranks from whole pools: at `limit` per channel it must return what
    the recall statement returns (cosine only for the dense top, bm25 only for the keyword
    top, recency as stored), or offline figures would not be the live ones."""
    import uuid

    from app.memory.model import FactType, SourceKind
    from app.memory.scoring import RecallRow
    from evals.rescore import Case, candidates

    t = datetime(2023, 5, 8, tzinfo=UTC)

    def row(n: int, cosine: float, bm25: float | None, rank: int | None = None) -> RecallRow:
        return RecallRow(
            id=uuid.UUID(int=n),
            statement=f"fact {n}",
            predicate=None,
            value=None,
            type=FactType.EPISODIC,
            scope="global",
            source_kind=SourceKind.DOCUMENT,
            confidence=0.9,
            valid_from=t,
            last_observed_at=t,
            created_at=t,
            cosine=cosine,
            bm25=bm25,
            recency_rank=rank,
            occurred_at=t,
        )

    rows = [row(1, 0.9, None), row(2, 0.8, 1.0), row(3, 0.1, 5.0), row(4, 0.0, None, 1)]
    q = locomo.Question("q", 4, ("D1:1",))
    case = Case("d", "turns", "c", q, rows, 5.0, None, {}, t)
    got = {r.id.int: (r.cosine, r.bm25) for r in candidates(case, 1)}
    assert got == {1: (0.9, None), 3: (None, 5.0), 4: (None, None)}
    got = {r.id.int: (r.cosine, r.bm25) for r in candidates(case, 2)}
    assert got == {1: (0.9, None), 2: (0.8, 1.0), 3: (None, 5.0), 4: (None, None)}


def _mode_result(mode: str, integrity: locomo.Integrity, asked: int) -> locomo.ModeResult:
    split = {"all": ["c1"]}
    table = locomo.Table()
    q = locomo.Question("where?", 4, ("D1:1",))
    for _ in range(asked):
        table.add(q, [["D1:1"]])
    return locomo.ModeResult(
        mode,
        {name: table for name in split},
        {"c1": {"D1:1"}},
        {"c1": {"D1:1"}},
        [1.0] * asked,
        {},
        {},
        integrity,
    )


def test_a_mode_whose_embedder_failed_is_refused_not_reported(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A run under load whose writes lost their vectors, or whose recalls lost the dense
    channel, measures an outage: its figures must not reach the report."""
    split = {"all": ["c1"]}
    base = {"all": locomo.Table()}
    clean = _mode_result("turns", locomo.Integrity(0, 0, 3), 3)
    blind = _mode_result("observations", locomo.Integrity(0, 2, 3), 3)
    unvectored = _mode_result("observations", locomo.Integrity(5, 0, 3), 3)
    unlogged = _mode_result("observations", locomo.Integrity(0, 0, 1), 3)
    for bad in (blind, unvectored, unlogged):
        out = locomo.report("d", [], [clean, bad], base, split)
        assert set(out["modes"]) == {"turns"}
        assert set(out["refused"]) == {"observations"}
        printed = capsys.readouterr().out
        assert "mode=observations REFUSED" in printed
        assert "memgate observations" not in printed and "memgate turns" in printed
    assert locomo.report("d", [], [clean], base, split)["refused"] == {}


def test_evidence_written_as_one_string_counts_every_turn() -> None:
    assert locomo.evidence_ids(["D8:6; D9:17", "D1:2", "D1:2"]) == ["D8:6", "D9:17", "D1:2"]
    assert locomo.evidence_ids(["D3:1,D3:4"]) == ["D3:1", "D3:4"]
    assert locomo.evidence_ids([]) == []


def test_loaded_questions_keep_both_turns_of_a_joined_evidence_string(tmp_path: Path) -> None:
    conv = {
        "sample_id": "x",
        "conversation": {
            "speaker_a": "A",
            "speaker_b": "B",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "A", "dia_id": "D1:1", "text": "I moved to Lisbon."},
                {"speaker": "B", "dia_id": "D1:2", "text": "Nice, I got a dog."},
            ],
        },
        "qa": [{"question": "q?", "category": 1, "evidence": ["D1:1; D1:2", "D"]}],
    }
    path = tmp_path / "c.json"
    path.write_text(json.dumps([conv]), encoding="utf-8")
    [c] = locomo.load(path)
    assert c.questions[0].evidence == ("D1:1", "D1:2")
