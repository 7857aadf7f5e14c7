"""Round 5b's detector changes (docs/gate.md, round 5b): transient moments and plans, other
people by name and in records, sensitive word families; each generalised from a class of
wording, each with a look-alike that must not fire, and every new or changed pattern timed
on crafted 5,000-character input."""

from __future__ import annotations

import re
import time

import pytest

from app.memory import detectors as d
from app.memory import semantic
from app.memory.gate import value_text


def transient(text: str) -> list[str]:
    return [f.detail for f in d.find_not_reusable(text)]


def third(text: str) -> list[str]:
    return [f.detail for f in d.find_third_party_pii(text)]


@pytest.mark.parametrize(
    "text",
    [
        "Totally knackered after that hike",  # an intensifier opens a momentary state
        "I'm famished",
        "Nighty night, talk soon",  # closings in a row
        "take care, see ya",
        "明天见，拜了",
        "I wonder who won the match last night",  # wondering aloud, any wh-word
        "I'd like to know where the nearest pharmacy is",
        "Can't decide which shoes to wear",
        "不知道明天下不下雨",  # A-not-A after 不知道
        "晚上穿什么好呢",
        "正在等电梯",
        "中午打算吃拉面",  # the time of day, then a plan verb
        "下班后准备去理发",
        "要是有一天我退休了，就去种花",
        "Someday we could open a bakery",
        "I might learn to sail one day",
    ],
)
def test_transient_wordings(text: str) -> None:
    assert transient(text)


@pytest.mark.parametrize(
    "text",
    [
        "I'm hungry for feedback on my designs",  # a state word taken figuratively
        "I work full-time at a bank",
        "I'm not sure how to handle async in Rust",
        "晚上十点以后不要给我发消息",  # a standing window, not tonight's plan
        "晚上我一般去跑步",
        "下班后我喜欢去健身房",
        "I quit in March because I was exhausted",  # a mood in a past event's reason
        "去年我辞职了，因为太累了",
        "I'm curious about distributed systems",
        "Morning runs are my favourite",
    ],
)
def test_durable_look_alikes_are_not_transient(text: str) -> None:
    assert not transient(text)


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("She was diagnosed with a glioma", "health"),  # tumour stems
        ("He has leukaemia", "health"),
        ("stage two breast cancer", "health"),
        ("they're expecting their first baby", "health"),
        ("我表嫂怀了双胞胎", "health"),
        ("two years sober next week", "health"),
        ("I talk to a psychologist", "health"),
        ("she earns $95k per year", "finance"),
        ("I'm late on the rent again", "finance"),
        ("I owe the bank $12,000", "finance"),
        ("debt collectors keep calling", "finance"),
        ("I attend mass on Sundays", "religion"),
        ("我们全家都去教会", "religion"),
        ("I'm the union rep at work", "politics"),
        ("我加入了工会", "politics"),
        ("I voted Labour in the local elections", "politics"),
        ("he served 3 years for robbery", "criminal"),
        ("I was charged with assault in 2012", "criminal"),
    ],
)
def test_sensitive_word_families(text: str, category: str) -> None:
    assert category in d.sensitive_categories(text)


@pytest.mark.parametrize(
    "text",
    [
        "a member of the European Union",
        "I voted early in the last election",
        "I got my diploma in 2019",
        "The aroma of fresh bread",
        "She works in academia",
        "Let me shrink the image",
        "I'm expecting a parcel",
    ],
)
def test_sensitive_look_alikes(text: str) -> None:
    assert not d.sensitive_categories(text)


@pytest.mark.parametrize(
    "text",
    [
        "Marco from sales was arrested for drunk driving",  # a named person opening a sentence
        "Priya has epilepsy",
        "小王得了抑郁症",  # 小/老 + surname
        "刘洋最近在做化疗",  # a full name opening the clause
        "Resident: John Smith, DOB 04/05/1950, room 12",  # a record's role in tool output
        "My uncle lives on 5th Avenue",  # a street: their address
        "我叔叔家在和平路8号",
    ],
)
def test_third_party_wordings(text: str) -> None:
    assert third(text)


def test_a_relation_beside_a_sensitive_field_is_a_record() -> None:
    text = value_text({"people": [{"relation": "father", "diagnosis": "Parkinson's"}]})
    assert third(text)


@pytest.mark.parametrize(
    "text",
    [
        "My grandparents live in Lisbon",  # a relative's city is not their data
        "我舅舅住在广州",
        "Python has great support for my diabetes app",  # a capitalised word that is no one
        "Ramadan is in March this year",
        "May has a lot of public holidays",
        "周末有心理咨询",  # 周 opening a clause is not a surname here
        "老师说下周考试",
    ],
)
def test_third_party_look_alikes(text: str) -> None:
    assert not third(text)


def test_the_user_as_a_kid_is_not_another_person() -> None:
    assert not semantic.mentions_other_person("I was diagnosed with asthma as a kid")
    assert not semantic.mentions_other_person("I'm a nurse at St Thomas' and St Mary's")
    assert semantic.mentions_other_person("My kid was diagnosed with asthma")


# ------------------------------------------------------------------------ timing

_CHANGED: list[tuple[str, re.Pattern[str]]] = [
    *((f"sensitive_{name}", p) for name, p in d._SENSITIVE.items()),
    *((f"third_party_{name}", p) for name, p in d._THIRD_PARTY_PATTERNS),
    ("other_person_en", d._OTHER_PERSON_EN),
    ("other_person_zh", d._OTHER_PERSON_ZH),
    ("greeting", d._GREETING),
    ("closing", d._CLOSING),
    ("mood", d._MOOD),
    ("moment", d._MOMENT),
    ("hypothetical", d._HYPOTHETICAL),
    ("plan", d._PLAN),
    ("past_narration", d._PAST_NARRATION),
    ("the_user_as", semantic._THE_USER_AS),
]
N = 5000
_ADVERSARIAL = {
    "spaces": "I " + " " * N + "x",
    "newlines": "我\n" * (N // 2),
    "cjk": "我妈我妈住在" * (N // 6),
    "cjk_names": "老王陈磊有" * (N // 5),
    "abab": "不知道好不好" * (N // 6),
    "greetings": "night night, " * (N // 13),
    "moods": "so so so tired " * (N // 15),
    "money": "makes $1,000,000 " * (N // 17),
    "owe": "owe about around " * (N // 17),
    "names": "Tom Lee from " * (N // 13),
    "record": "Patient: Ann Lee, " * (N // 18),
    "vote": "voted for the party in the " * (N // 27),
    "union": "member of the union union " * (N // 26),
    "street": "lives in the city of the " * (N // 25),
    "streets_zh": "住在城市的住在" * (N // 7),
    "someday": "someday someday one day I " * (N // 26),
    "plan_zh": "晚上晚上下班顺路" * (N // 8),
    "letters": "a" * N,
    "stage": "stage 3 stage 3 " * (N // 16),
    "st": "St Mary's " * (N // 10),
    "kid": "as a as a as a " * (N // 15),
}


@pytest.mark.parametrize(("name", "pattern"), _CHANGED, ids=[n for n, _ in _CHANGED])
def test_changed_patterns_are_linear(name: str, pattern: re.Pattern[str]) -> None:
    for label, text in _ADVERSARIAL.items():
        start = time.perf_counter()
        for _ in pattern.finditer(text):
            pass
        pattern.fullmatch(text)
        elapsed = time.perf_counter() - start
        assert elapsed < 0.5, (name, label, elapsed)


@pytest.mark.parametrize("label", sorted(_ADVERSARIAL))
def test_detectors_on_adversarial_input_are_fast(label: str) -> None:
    text = _ADVERSARIAL[label]
    start = time.perf_counter()
    d.find_not_reusable(text)
    d.find_third_party_pii(text)
    d.sensitive_categories(text)
    semantic.mentions_other_person(text)
    assert time.perf_counter() - start < 0.5
