"""Small text helpers of the matchers: punctuation, list splitting, plurals, pronouns, negation."""

from __future__ import annotations

import re

from app.memory.prefilter import fold, rx
from app.providers import extract_prefs

# matched from the first character of the run only: a search inside a long run of blanks
# would otherwise be quadratic
TRAILING_PUNCT = rx(r"(?<![\s。！？!?.;；,，:：~～…])[\s。！？!?.;；,，:：~～…]+$")
CLAUSE = rx(r"[,，]")


def clean_zh(value: str) -> str:
    return re.sub(
        r"^[的是]|(?:了|啦|呀|哦|啊|的|呢|吧|这些|东西|等等?)+$", "", value.strip(" ,，、")
    ).strip()


def split_list_zh(value: str) -> list[str]:
    parts = re.split(r"和|、|与|跟|及|以及|还有|,|，|/", value)
    return [p for p in (clean_zh(x) for x in parts) if p]


def split_list_en(value: str) -> list[str]:
    parts = re.split(r"(?i)\s*(?:,|&|/|\band\b|\bor\b|\bplus\b)\s*", value)
    out = []
    for part in parts:
        part = re.sub(r"(?i)^(?:a|an|the|all|any|some)\s+", "", part.strip())
        part = re.sub(r"(?i)(?<!\s)\s+(?:too|as well|also|either)$", "", part).strip(" .")
        if part:
            out.append(part)
    return out


def singular(word: str) -> str:
    w = fold(word).strip()
    if " " in w:
        head, _, last = w.rpartition(" ")
        return f"{head} {singular(last)}"
    if w.endswith("ies") and len(w) > 4:
        return w[:-3] + "y"
    if w.endswith("oes"):
        return w[:-2]
    if w.endswith("s") and not w.endswith(("ss", "us", "is", "fish", "sis")) and len(w) > 3:
        return w[:-1]
    return w


def swap_pronouns_en(text: str) -> str:
    table = {"me": "them", "my": "their", "mine": "theirs", "myself": "themselves", "i": "they"}

    def sub(m: re.Match[str]) -> str:
        return table[fold(m.group(0))]

    return re.sub(r"(?i)\b(?:me|my|mine|myself|i)\b", sub, text)


def third_person_en(text: str) -> str:
    return extract_prefs.third_person_en(text)


def negated_before(s: str, start: int) -> bool:
    window = s[max(0, start - 12) : start]
    return bool(
        re.search(
            r"不要|别|不许|禁止|不准|不(?:太|怎么|大|是很)?喜欢|讨厌|不想|勿|不用|不是|不爱|受不了|"
            r"不习惯|而不是|比起",
            window,
        )
        or re.search(
            r"(?i)\b(?:don't|do not|dont|never|no|not|without|hate|dislike|avoid|stop|"
            r"rather than|instead of|over)\b",
            window,
        )
    )
