"""Explicit instructions: the "记住…", "以后都…", "remember…", "from now on…" prefix (or
a "…记住了" / "…remember that" tail) peeled off a sentence (`peel_instruction`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

_LEAD_ZH = r"^(?:好的|好|那|那么|对了|另外|还有|顺便说一下|顺便|嗯)?[,\s]*"
_REMEMBER_ZH = re.compile(
    _LEAD_ZH + r"(?:请|麻烦|你)*(?:帮我|给我)?"
    r"(?:记住|记一下|记下来|记下|记好|牢记|别忘了|不要忘了|记得(?=我))(?:了|哦|啊|一下)?[:：,\s]*"
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
    r"note|for (?:future )?reference|save (?:this|that)|memorize)"
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
    for pattern in (_REMEMBER_TAIL_ZH, _REMEMBER_TAIL_EN):
        m = pattern.search(s)
        if m and m.start() > 0:
            return _Instruction(True, s[: m.start()].strip(" ,，"), True)
    return _Instruction(False, s, False)
