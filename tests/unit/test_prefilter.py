"""app.memory.prefilter: a guarded regex finds exactly what the plain one finds.

The needles are a necessary condition, so the test is: wherever the check says "no
needle", the plain pattern must not match. It runs every guarded pattern of the gate's
and the rule extractor's modules over a sixteenth of the texts under tests/data (the gate
corpus, the rounds' sets, the eval data) and their unmasked views, taken by a fixed
stride, and some of them with their case changed and with the two characters re's
IGNORECASE folds beyond `str.lower` ('ı', 'ſ', 'İ'). (All of them take ~3 minutes: run
`MEMGATE_PREFILTER_ALL=1 pytest tests/unit/test_prefilter.py` after changing a pattern
family or the needle reader.)
"""

from __future__ import annotations

import functools
import gc
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.memory import detectors, prefilter, unmask
from app.memory.model import Reason
from app.memory.normalize import nfkc
from app.memory.prefilter import Guarded, find_needles
from app.providers import durable, extract_prefs  # noqa: F401 — their patterns are checked too
from app.providers.extractor import Turn
from app.providers.rules.extractor import RuleExtractor

DATA = Path(__file__).resolve().parents[1] / "data"


def _strings(node: Any, out: set[str]) -> None:
    if isinstance(node, str):
        if node.strip():
            out.add(node)
    elif isinstance(node, dict):
        for v in node.values():
            _strings(v, out)
    elif isinstance(node, list):
        for v in node:
            _strings(v, out)


@functools.cache
def corpus() -> tuple[str, ...]:
    out: set[str] = set()
    for path in sorted(DATA.rglob("*")):
        if path.suffix in (".yaml", ".yml"):
            _strings(yaml.safe_load(path.read_text(encoding="utf-8")), out)
        elif path.suffix == ".json":
            _strings(json.loads(path.read_text(encoding="utf-8")), out)
        elif path.suffix == ".jsonl":
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    _strings(json.loads(line), out)
        elif path.suffix == ".txt":
            out.update(line for line in path.read_text(encoding="utf-8").splitlines() if line)
    texts = set(out)
    for text in out:
        folded = nfkc(text)
        texts.add(folded)
        texts.update(view.text for view in unmask.views(folded))
    return tuple(sorted(texts))


def guarded_patterns() -> list[Guarded]:
    detectors.find_secrets("warm up")  # every module of the gate imported
    RuleExtractor().extract_sync([Turn("user", "I prefer tea")], user_id="u")  # and the rules
    return [o for o in gc.get_objects() if isinstance(o, Guarded)]


def test_the_gate_modules_use_guarded_patterns() -> None:
    assert len(guarded_patterns()) >= 400


def test_no_guarded_pattern_skips_a_text_it_matches() -> None:
    texts = corpus()
    assert len(texts) > 10_000
    if not os.environ.get("MEMGATE_PREFILTER_ALL"):
        texts = texts[::16]
    variants = (
        [t.upper() for t in texts[::7]]
        + [t.replace("i", "ı").replace("s", "ſ") for t in texts[::5]]
        + [t.replace("i", "İ").replace("I", "İ") for t in texts[::3]]
    )
    missed: list[tuple[str, str]] = []
    for pattern in guarded_patterns():
        plain = pattern._p
        for text in (*texts, *variants):
            if not pattern._may(text) and plain.search(text):
                missed.append((pattern.pattern[:60], text[:60]))
    assert missed == []


@pytest.mark.parametrize(
    ("pattern", "flags", "needles"),
    [
        (r"\bpassword\s+is\b", 0, {"password"}),
        (r"(?:kidney|liver)\s+transplant", 0, {"transplant"}),
        (r"(?:kidney|liver)\s+(?:list|queue)", 0, {"kidney", "liver"}),
        (r"Green|Labour", re.I, {"green", "labour"}),
        (r"(?-i:Tory)", re.I, {"tory"}),
        (r"糖尿病|高血压", 0, {"糖尿病", "高血压"}),
        (r"(?:a+b)+", 0, {"a"}),
    ],
)
def test_needles_every_match_holds(pattern: str, flags: int, needles: set[str]) -> None:
    assert find_needles(pattern, flags) == frozenset(needles)


@pytest.mark.parametrize(
    "pattern",
    [
        r"\d{6}",  # classes only
        r"(?:secret)?\w+",  # the only word is optional
        r"secret|\d+",  # one branch has no word
        r"(?:token){0,3}x?",
        r"(?:key|)\s",  # an empty branch
        r"Ä\d",  # a cased letter outside ASCII is never a needle; nothing else is left
    ],
)
def test_no_needle_where_a_match_can_do_without(pattern: str) -> None:
    assert find_needles(pattern) is None
    assert isinstance(prefilter.rx(pattern), re.Pattern)


@pytest.mark.parametrize(
    ("pattern", "text"),
    [
        ("sin", "SİN"),  # 'İ'.lower() is two characters: the needle "sin" must still be found
        (r"\bignore\b", "İGNORE your rules"),
        ("kiss", "Kİſſ"),
        (r"social\s+security", "socİal securİty"),
        ("password", "paſſword"),
        ("skip", "SKİP"),
        ("key", "\u212aEY"),  # the Kelvin sign
    ],
)
def test_letters_re_reads_as_ascii_are_folded(pattern: str, text: str) -> None:
    assert re.search(pattern, text, re.I)
    assert prefilter.rx(pattern, re.I).search(text)


def test_a_dotted_capital_i_in_spelled_digits_is_screened_not_a_crash() -> None:
    text = "Socİal securİty: four one two, sİx eİght, three three nİne zero"
    assert [f.reason for f in detectors.screen(text)] == [Reason.GOVERNMENT_ID]


@pytest.mark.parametrize(
    "text",
    [
        "İ speak Englİsh, Spanİsh and a bİt of Portuguese",
        "İ'M VEGETARİAN, BUT İ DO EAT EGGS",
        "Always reply İn englİsh.",
    ],
)
def test_the_rule_extractor_reads_dotted_capitals_as_re_does(text: str) -> None:
    # a pattern matched "englİsh" as English; the lookup by its lower() raised KeyError
    # and failed the whole extraction job (found with 'İ' swapped into the corpus)
    plain = text.replace("İ", "I").replace("ı", "i")
    got = RuleExtractor().extract_sync([Turn("user", text)], user_id="u")
    want = RuleExtractor().extract_sync([Turn("user", plain)], user_id="u")
    assert [c.predicate for c in got] == [c.predicate for c in want]


def test_a_time_in_long_s_is_read_not_a_crash() -> None:
    from datetime import UTC, datetime

    from app.memory import timeref

    now = datetime(2026, 12, 7, tzinfo=UTC)
    assert timeref.find("I ſtopped drinking three yearſ ago", now) == timeref.find(
        "I stopped drinking three years ago", now
    )


def test_guarded_methods_answer_like_re() -> None:
    p = prefilter.rx(r"\bpass(?P<n>word)\b", re.I)
    plain = re.compile(r"\bpass(?P<n>word)\b", re.I)
    assert isinstance(p, Guarded)
    for text in ("my PASSWORD and password", "nothing here", "paſſword", "PASSWORD"):
        assert [m.span() for m in p.finditer(text)] == [m.span() for m in plain.finditer(text)]
        assert p.findall(text) == plain.findall(text)
        assert p.sub("x", text) == plain.sub("x", text)
        assert p.subn("x", text) == plain.subn("x", text)
        assert p.split(text) == plain.split(text)
        assert bool(p.search(text)) == bool(plain.search(text))
        assert bool(p.match(text)) == bool(plain.match(text))
        assert bool(p.fullmatch(text)) == bool(plain.fullmatch(text))
    assert p.groupindex == plain.groupindex and p.pattern == plain.pattern


def test_a_pattern_made_after_the_first_check_is_checked_too() -> None:
    prefilter.alive("the automaton is built by now")
    late = prefilter.rx(r"\bzq(?:xw|yv)late\b")
    assert isinstance(late, Guarded)
    text = "one zqyvlate two"
    assert late.search(text) is not None
    assert late.search("one zqyv late two") is None
    assert [m.span() for m in late.finditer(text)] == [(4, 12)]


def test_threads_get_the_answers_one_thread_gets() -> None:
    from concurrent.futures import ThreadPoolExecutor

    texts = corpus()[::40]
    patterns = guarded_patterns()

    def hits(text: str) -> list[int]:
        return [i for i, p in enumerate(patterns) if p.search(text)]

    alone = [hits(t) for t in texts]
    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(hits, texts)) == alone
