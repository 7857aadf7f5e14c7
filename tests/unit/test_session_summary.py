"""The session summary and resume hint (docs/sessions.md), table-driven."""

from __future__ import annotations

from typing import Any

import pytest

from app.memory.detectors import find_not_reusable
from app.session.summary import gist, summarize


def t(content: str, role: str = "user") -> dict[str, Any]:
    return {"role": role, "content": content}


@pytest.mark.parametrize(
    ("turns", "slots", "summary_has", "hint_has", "lang"),
    [
        (
            [
                t("你好"),
                t("我想订下周五去上海的高铁票。"),
                t("几点？", "assistant"),
                t("上午九点，二等座"),
            ],
            {"destination": "上海"},
            [
                "会话摘要（3轮用户发言）",
                "「我想订下周五去上海的高铁票」",
                "「上午九点,二等座」",
                "destination=上海",
            ],
            ["上次会话停在「上午九点,二等座」", "已知 destination=上海，无需重问"],
            "zh",
        ),
        (
            [t("I need a plumber for the kitchen sink. It leaks."), t("ok", "assistant")],
            {"zip": "10001"},
            [
                "Session summary (1 user turns)",
                "\u201cI need a plumber for the kitchen sink\u201d",
                "collected: zip=10001",
            ],
            ["ended at \u201cI need a plumber", "already known: zip=10001"],
            "en",
        ),
        (
            [t("hello"), t("thanks!")],
            {"city": "北京"},
            ["Session summary (2 user turns); collected: city=北京."],
            ["Last session had 2 user turns", "already known: city=北京"],
            "en",
        ),
    ],
)
def test_summary_table(
    turns: list[dict[str, Any]],
    slots: dict[str, Any],
    summary_has: list[str],
    hint_has: list[str],
    lang: str,
) -> None:
    out = summarize(turns, slots)
    assert out is not None
    for piece in summary_has:
        assert piece in out.summary, (piece, out.summary)
    for piece in hint_has:
        assert piece in out.hint, (piece, out.hint)
    assert out.lang == lang
    assert len(out.summary) <= 480 and len(out.hint) <= 480


def test_nothing_to_summarize() -> None:
    assert summarize([t("hi"), t("How can I help?", "assistant")], {}) is None
    assert summarize([], {}) is None


def test_assistant_words_never_summarized() -> None:
    out = summarize([t("我要退货"), t("您的订单号 SECRET-ASSISTANT 已处理", "assistant")], {})
    assert out is not None and "SECRET-ASSISTANT" not in out.summary + out.hint


def test_outline_only_leaves_user_words_out() -> None:
    out = summarize([t("如果我是老板我会用Rust")], {"lang": "rust"}, outline_only=True)
    assert out is not None and "老板" not in out.summary and "lang=rust" in out.summary


def test_summary_does_not_read_as_a_question() -> None:
    out = summarize([t("明天上海天气怎么样？")], {})
    assert out is not None and not find_not_reusable(out.summary)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("我想订票。还有别的", "我想订票"),
        ("Book a flight. Then a hotel", "Book a flight"),
        ("  多余   空格 ", "多余 空格"),
        ("x" * 100, "x" * 40 + "…"),
    ],
)
def test_gist(text: str, expected: str) -> None:
    assert gist(text) == expected
