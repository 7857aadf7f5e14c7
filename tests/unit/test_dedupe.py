"""The dedupe rule, table-driven: similar statements merge only with the same information."""

from __future__ import annotations

import pytest

from app.memory.dedupe import differing_information, may_merge, same_information

# (id, a, b, the informative tokens that differ). [] = the same fact, in other words.
PAIRS: list[tuple[str, str, str, list[str]]] = [
    # one name / code word
    (
        "en_code_word",
        "my locker code word is amber",
        "my locker code word is cobalt",
        ["amber", "cobalt"],
    ),
    ("zh_code_word", "我的储物柜密码词是琥珀", "我的储物柜密码词是钴蓝", ["琥珀", "钴蓝"]),
    (
        "en_person_name",
        "my dentist is Dr. Alvarez",
        "my dentist is Dr. Romero",
        ["alvarez", "romero"],
    ),
    ("en_capitalised_common_word", "my manager is Will", "my manager is Grace", ["grace", "will"]),
    ("en_product_name", "I use Go at work", "I use Rust at work", ["go", "rust"]),
    ("zh_latin_inside_chinese", "用户使用 Python", "用户使用 Rust", ["python", "rust"]),
    ("zh_thing", "用户喜欢喝咖啡", "用户喜欢喝茶", ["喝咖啡", "喝茶"]),
    # one number
    ("en_flight_number", "my flight is LH 452", "my flight is LH 457", ["452", "457"]),
    ("zh_room_number", "我住在302室", "我住在305室", ["302", "305"]),
    ("zh_chinese_numeral", "我住在三楼", "我住在五楼", ["三楼", "五楼"]),
    ("en_time", "standup is at 10am", "standup is at 11am", ["10am", "11am"]),
    # one code
    ("en_order_code", "my order is ABC123", "my order is ABC124", ["abc123", "abc124"]),
    ("zh_code", "我的工号是A1023", "我的工号是A1024", ["a1023", "a1024"]),
    # the same fact in other words: word order, case, function words, preference verbs
    (
        "en_reordered",
        "The user has a team standup every weekday at 10am",
        "Every weekday at 10am the user has a team standup",
        [],
    ),
    ("en_preference_verb", "The user prefers dark mode", "User likes dark mode", []),
    (
        "en_plural_and_filler",
        "The user prefers tables",
        "The user really likes tables for output",
        [],
    ),
    ("zh_preference_verb", "用户偏好用表格输出", "用户喜欢表格", []),
    ("zh_love", "用户偏好用表格输出", "用户爱表格", []),
    # quantities, comparisons and times change what is said
    ("zh_adverb", "用户通常喜欢简洁的回答", "用户喜欢简洁的回答", ["通常"]),
    (
        "en_comparative",
        "more detail in code review answers",
        "less detail in code review answers",
        ["less", "more"],
    ),
    (
        "en_frequency",
        "the user always runs in the morning",
        "the user sometimes runs in the morning",
        ["alway", "sometime"],
    ),  # stemmed
    ("zh_time", "用户现在住在杭州", "用户以后住在杭州", ["以后", "现在"]),
    ("sentence_start_capital", "Tables are what the user prefers", "the user prefers tables", []),
]


@pytest.mark.parametrize(("a", "b", "differing"), [p[1:] for p in PAIRS], ids=[p[0] for p in PAIRS])
def test_differing_information(a: str, b: str, differing: list[str]) -> None:
    assert differing_information(a, b) == differing
    assert differing_information(b, a) == differing
    assert same_information(a, b) is (not differing)


# (id, similarity, threshold, same information?, merge?)
RULE: list[tuple[str, float | None, float, bool, bool]] = [
    ("similar_and_same_information", 0.95, 0.92, True, True),
    ("similar_but_other_information", 0.99, 0.92, False, False),
    ("same_information_not_similar", 0.80, 0.92, True, False),
    ("no_vector", None, 0.92, True, False),
    ("at_threshold", 0.92, 0.92, True, True),
]


@pytest.mark.parametrize(
    ("similarity", "threshold", "same", "merge"), [r[1:] for r in RULE], ids=[r[0] for r in RULE]
)
def test_may_merge(similarity: float | None, threshold: float, same: bool, merge: bool) -> None:
    a = "my flight is LH 452"
    b = a if same else "my flight is LH 457"
    assert may_merge(a, b, similarity, threshold) is merge
