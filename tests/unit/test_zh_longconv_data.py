"""The Chinese long-conversation eval set (tests/data/eval/zh-longconv.json) is well-formed:
LoCoMo-shaped, big enough, and every evidence / observation dia_id points at a real turn.
No server is started; this only reads the file."""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import datetime
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

PATH = Path(__file__).resolve().parent.parent / "data" / "eval" / "zh-longconv.json"

MIN_CONVERSATIONS = 2
MIN_SESSIONS = 5
MIN_TURNS = 320
MIN_QUESTIONS = 70
MIN_PER_CATEGORY = 10
CATEGORIES = {1, 2, 3, 4}  # 1 multi-hop, 2 temporal, 3 open-domain / inference, 4 single-hop
OBS_PER_SPEAKER = range(3, 9)
DATE_FORMAT = "%Y-%m-%d %H:%M"
SESSION_KEY = re.compile(r"session_(\d+)")
DIA_ID = re.compile(r"D(\d+):(\d+)")


@pytest.fixture(scope="module")
def data() -> list[dict[str, Any]]:
    doc = json.loads(PATH.read_text(encoding="utf-8"))
    assert isinstance(doc, list)
    return doc


def sessions(conv: dict[str, Any]) -> list[int]:
    nums = sorted(int(m.group(1)) for k in conv if (m := SESSION_KEY.fullmatch(k)))
    assert nums == list(range(1, len(nums) + 1)), f"sessions not numbered 1..n: {nums}"
    return nums


def turns(conv: dict[str, Any]) -> list[dict[str, Any]]:
    return [t for n in sessions(conv) for t in conv[f"session_{n}"]]


def dia_ids(conv: dict[str, Any]) -> set[str]:
    return {t["dia_id"] for t in turns(conv)}


def test_conversations_and_ids(data: list[dict[str, Any]]) -> None:
    assert len(data) >= MIN_CONVERSATIONS
    ids = [c["sample_id"] for c in data]
    assert len(set(ids)) == len(ids)
    for c in data:
        assert set(c) >= {"sample_id", "conversation", "observation", "qa"}


def test_sessions_turns_and_dates(data: list[dict[str, Any]]) -> None:
    total = 0
    for c in data:
        conv = c["conversation"]
        speakers = {conv["speaker_a"], conv["speaker_b"]}
        assert len(speakers) == 2
        nums = sessions(conv)
        assert len(nums) >= MIN_SESSIONS, c["sample_id"]
        dates = [datetime.strptime(conv[f"session_{n}_date_time"], DATE_FORMAT) for n in nums]
        assert all(a < b for a, b in pairwise(dates)), c["sample_id"]
        switches = pairs = 0
        for n in nums:
            session = conv[f"session_{n}"]
            assert session, f"{c['sample_id']} session {n} is empty"
            for i, t in enumerate(session, start=1):
                assert t["dia_id"] == f"D{n}:{i}", t["dia_id"]
                assert t["speaker"] in speakers, t
                assert isinstance(t["text"], str) and t["text"].strip(), t
            for a, b in pairwise(session):
                pairs += 1
                switches += a["speaker"] != b["speaker"]
        assert switches >= 0.8 * pairs, f"{c['sample_id']}: speakers should mostly alternate"
        total += len(turns(conv))
    assert total >= MIN_TURNS


def test_questions(data: list[dict[str, Any]]) -> None:
    per_category: Counter[int] = Counter()
    for c in data:
        known = dia_ids(c["conversation"])
        for q in c["qa"]:
            assert isinstance(q["question"], str) and q["question"].strip()
            assert isinstance(q["answer"], str) and q["answer"].strip()
            assert q["category"] in CATEGORIES, q
            evidence = q["evidence"]
            assert evidence and set(evidence) <= known, q
            assert len(set(evidence)) == len(evidence), q
            if q["category"] == 1:
                assert len(evidence) >= 2, f"multi-hop needs 2+ evidence turns: {q['question']}"
            per_category[q["category"]] += 1
        questions = [q["question"] for q in c["qa"]]
        assert len(set(questions)) == len(questions), c["sample_id"]
    assert sum(per_category.values()) >= MIN_QUESTIONS
    assert all(per_category[k] >= MIN_PER_CATEGORY for k in CATEGORIES), per_category


def test_observations(data: list[dict[str, Any]]) -> None:
    for c in data:
        conv = c["conversation"]
        known = dia_ids(conv)
        speakers = {conv["speaker_a"], conv["speaker_b"]}
        nums = sessions(conv)
        assert set(c["observation"]) == {f"session_{n}_observation" for n in nums}
        for n in nums:
            per_speaker = c["observation"][f"session_{n}_observation"]
            assert set(per_speaker) == speakers, (c["sample_id"], n)
            for speaker, items in per_speaker.items():
                assert len(items) in OBS_PER_SPEAKER, (c["sample_id"], n, speaker)
                for text, dia_id in items:
                    assert isinstance(text, str) and text.strip()
                    assert dia_id in known, (c["sample_id"], dia_id)
                    m = DIA_ID.fullmatch(dia_id)
                    assert m and int(m.group(1)) == n, f"{dia_id} is not in session {n}"


def test_no_long_digit_runs(data: list[dict[str, Any]]) -> None:
    """No ID, phone or card numbers: the write gate refuses those, and that is another test."""
    text = json.dumps(data, ensure_ascii=False)
    assert not re.search(r"\d{9,}", text)
