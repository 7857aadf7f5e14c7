"""A short reply to the assistant's question about the user ("What do you do?" → "Nurse,
mostly nights"; "你住在哪？" → "杭州"): the question supplies the subject and verb the reply
leaves out, so the reply is read as the full sentence it stands for (`as_statement`).

Only questions about ordinary profile facts (work, home, origin, tools) lend their frame;
the reply then goes through the same screening and matchers as any sentence, so a reply
about someone else, a plan or a secret is still dropped."""

from __future__ import annotations

import re

from app.memory.text import detect_lang, nfkc

# the assistant's question → the frame the reply fills ({} is the reply)
_FRAMES_EN: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(
            r"(?i)\bwhat\s+(?:do\s+you\s+do(?:\s+for\s+(?:a\s+living|work))?|(?:is|'s)\s+your\s+"
            # (ending the question: "what do you do when you're stressed?" asks no job)
            r"(?:job|profession|occupation|line\s+of\s+work|role))\s*(?:[?？.]|$)"
        ),
        "I work as {}",
    ),
    (
        re.compile(
            r"(?i)\bwhere\s+(?:do\s+you\s+live|are\s+you\s+(?:based|located|living))\b|"
            r"\bwhich\s+city\s+(?:do\s+you\s+live\s+in|are\s+you\s+in)\b"
        ),
        "I live in {}",
    ),
    (re.compile(r"(?i)\bwhere\s+are\s+you\s+(?:from|originally\s+from)\b"), "I'm from {}"),
    (
        re.compile(
            r"(?i)\b(?:which|what)\s+(?:editor|ide|language|programming\s+language|os|"
            r"operating\s+system|stack|framework|tools?|laptop|phone|database)\s+do\s+you\s+"
            r"(?:use|work\s+with|prefer|code\s+in)\b"
        ),
        "I use {}",
    ),
)
_FRAMES_ZH: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"你(?:是)?(?:做|干)什么(?:工作|的|行业)|你的(?:工作|职业)是什么|你从事什么"),
        "我是{}",
    ),
    (
        re.compile(
            r"你(?:现在)?住(?:在)?哪|你在哪个城市|你(?:现在)?在哪(?:个城市|里)?(?:工作|生活)"
        ),
        "我住在{}",
    ),
    (re.compile(r"你是哪里人|你老家(?:是|在)哪"), "我是{}人"),
    (
        re.compile(
            r"你(?:平时)?(?:用|使用)(?:什么|哪个|哪种)(?:编辑器|语言|系统|工具|电脑|手机|数据库)"
        ),
        "我用{}",
    ),
)
# A Latin reply to a Chinese question ("你平时用什么编辑器？" → "Sublime Text") is read in
# the English frame.
_EN_OF_ZH = {
    "我是{}": "I work as {}",
    "我住在{}": "I live in {}",
    "我是{}人": "I'm from {}",
    "我用{}": "I use {}",
}
# A reply that is already a sentence about the user needs no frame.
_FIRST_PERSON = re.compile(r"(?i)\b(?:i|i'm|i've|my|me|we|our)\b|我")
_LEAD = re.compile(r"(?i)^(?:(?:oh|um+|uh|well|so|yeah|yes|sure|haha|lol)[,\s]+)*")


def frame_of(question: str) -> str | None:
    """The frame an assistant's question lends its reply, or None."""
    text = nfkc(question)
    frames = _FRAMES_ZH if detect_lang(text) == "zh" else _FRAMES_EN
    return next((frame for pattern, frame in frames if pattern.search(text)), None)


def as_statement(reply: str, frame: str | None) -> str:
    """The reply as the sentence it stands for, or the reply itself."""
    text = _LEAD.sub("", nfkc(reply).strip()).strip()
    if frame is None or not text or _FIRST_PERSON.search(text) or "?" in text:
        return reply
    if frame.startswith("我") and detect_lang(text) == "en" and text.isascii():
        frame = _EN_OF_ZH[frame]
    if frame.startswith("我"):
        if len(text) > 15:
            return reply
        # "在杭州" after 住在, "山东人" after 是…人: the reply may repeat the frame's words
        text = re.sub(
            r"^(?:住)?在" if "住在" in frame else r"人$" if frame.endswith("人") else r"^$",
            "",
            text,
        )
        return frame.format(text)
    if len(text.split()) > 8 or detect_lang(text) != "en":
        return reply
    if frame != "I work as {}":
        text = re.sub(r"(?i)^(?:originally\s+)?(?:in|from|at|on)?\s*", "", text)
    elif not re.match(r"(?i)(?:a|an|the)\b", text):
        text = ("an " if text[:1].lower() in "aeiou" else "a ") + text
    return frame.format(text)
