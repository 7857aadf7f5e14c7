"""Explicit instructions: the "记住…", "以后都…", "remember…", "from now on…" prefix (or
a "…记住了" / "…remember that" tail) peeled off a sentence (`peel_instruction`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

_LEAD_ZH = r"^(?:好的|好|那|那么|对了|另外|还有|顺便说一下|顺便|嗯)?[,\s]*"
_REMEMBER_ZH = re.compile(
    _LEAD_ZH + r"(?:请|麻烦|你)*(?:帮我|给我)?"
    r"(?:记住|记一下|记下来|记下|记好|牢记|别忘了|不要忘了|记得(?=我)|"
    # said for the assistant to know: "跟你说一下，…", "说一下背景：…"
    r"跟你说一下|跟你说下|告诉你一下|和你说一下|说一下背景|补充一下背景|补充一下|提醒一下|说明一下)"
    r"(?:了|哦|啊|一下|哈)?[:：,，\s]*"
)
_REMEMBER_TAIL_ZH = re.compile(
    r"(?<![,\s])[,\s]*(?:请|你)?(?:要)?(?:记住|记好|记下|记一下)(?:了|哦|啊|啦|一下)?\s*$"
)
_STANDING_ZH = re.compile(
    _LEAD_ZH
    + r"(?:请|你)?我?(?:以后|今后|从现在起|从现在开始|从今以后|往后|以后的话|一律|永远|每次都|总是)"
    r"(?:请|你|都|也|一律|一直|每次|全部|统统|要)*[,\s]*"
)
_REMEMBER_EN = re.compile(
    r"(?i)^(?:ok(?:ay)?|so|also|and|btw|by the way|oh)?[,\s]*(?:please\s+)?"
    r"(?:remember|keep in mind|don't forget|do not forget|never forget|make a note|take note|"
    r"note|for (?:future )?reference|save (?:this|that)|memorize|"
    # said for the assistant to know: "FYI, …", "just so you know, …", "for context: …"
    r"fyi|f\.y\.i\.|just so you know|so you know|for context|"
    r"for your (?:info|information|reference)|heads up)"
    r"(?:\s+(?:this|that|of this|of that))?(?:\s*[:,\-]\s*|\s+that\s+|\s+|$)"
)
_REMEMBER_TAIL_EN = re.compile(
    r"(?i)(?<![,\s\-])[,\s\-]*(?:please\s+)?remember\s+(?:that|this)[.!\s]*$"
)
_STANDING_EN = re.compile(
    r"(?i)^(?:ok(?:ay)?|so|also|and)?[,\s]*(?:please\s+)?"
    r"(?:from now on|going forward|moving forward|in (?:the )?future|henceforth|always)"
    r"[,\s]*(?:please\s+)?(?:always\s+)?"
)
# "…, so keep that in mind (for recipes)", "…，推荐饮食的时候注意一下": what comes before is
# said to be remembered
_KEEP_IN_MIND_TAIL_EN = re.compile(
    # one start per run of separators (a search from every blank of a long run is quadratic)
    r"(?i)(?<=[^\s,;\-])[,;\s\-]+(?:so\s+|and\s+|please\s+){0,3}(?:(?:keep|bear)\s+(?:that|this|it)\s+"
    r"in\s+mind|"
    r"(?:take|factor)\s+(?:that|this|it)\s+(?:into\s+account|in)|keep\s+(?:suggestions|it|things|"
    r"recommendations)\s+within\s+(?:that|this|it)|if\s+that\s+matters|fyi|for\s+context|"
    # "…, so keep the meal plans low in sugar", "…, so no jumping exercises": an
    # instruction drawn from the fact
    r"so\s+(?:please\s+)?(?:keep|make|plan|avoid|skip|flag|no|don'?t|never|only)\b[^.!?]{0,60})"
    r"(?:\s+(?:for|when|with|while)\s+[^.!?]{0,40})?[.!\s]*$"
)
_KEEP_IN_MIND_TAIL_ZH = re.compile(
    r"[,，]\s*(?:[^，。！？,]{0,12}?(?:的时候|时|方面))?(?:请|你)?(?:注意一下|注意下|注意点|留意一下|留意下|"
    r"记着点|考虑一下|考虑进去|多注意)[。！!\s]*$"
)
GROUP_MARKER = re.compile(
    r"(?i)^(?:以下|以下几点|下面|下面几点|这些|这几点|the following|this|these)?\s*$"
)


@dataclass(frozen=True)
class _Instruction:
    explicit: bool
    body: str
    remember: bool  # "记住/remember": free statements may be kept when no rule matches


def peel_instruction(s: str) -> _Instruction:
    for pattern, remember in (
        (_REMEMBER_ZH, True),
        (_REMEMBER_EN, True),
        (_STANDING_ZH, False),
        (_STANDING_EN, False),
    ):
        m = pattern.match(s)
        if m and m.end() > 0 and m.group(0).strip(" ,"):
            return _Instruction(True, s[m.end() :].strip(), remember)
    for pattern in (
        _REMEMBER_TAIL_ZH,
        _REMEMBER_TAIL_EN,
        _KEEP_IN_MIND_TAIL_EN,
        _KEEP_IN_MIND_TAIL_ZH,
    ):
        m = pattern.search(s)
        if m and m.start() > 0:
            return _Instruction(True, s[: m.start()].strip(" ,，"), True)
    return _Instruction(False, s, False)
