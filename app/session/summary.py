"""Session summary and resume hint (docs/sessions.md: 会话结束 → 一句话摘要 + 下次续接 hint).

Pure and extractive: built from the user's own turns and the collected slots, in the
user's language, with no model call. When an LLM provider is configured, closing.py asks
it first (app/providers/extract_llm.py LLMSummarizer) and falls back to this one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from app.memory.detectors import find_not_reusable
from app.memory.text import detect_lang, nfkc

GIST_CHARS = 40  # one clause of a turn: enough to say what it was about
SLOT_VALUE_CHARS = 30
MAX_SLOTS = 6
MAX_STATEMENT = 480  # the fact statement limit is 500

_CLAUSE_END = re.compile(r"[。！？!?；;\n]|(?<=[a-z0-9])\.(?:\s|$)", re.I)
_TRAILING = " \t,，、。.!！?？~…:：;；\"'“”‘’「」"
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class SessionSummary:
    summary: str  # the episodic fact's statement
    hint: str  # what the next session's recall shows as resume_hint
    lang: str
    user_turns: int


def gist(text: str) -> str:
    """The first clause of a turn, folded, trimmed and cut to GIST_CHARS."""
    folded = _SPACES.sub(" ", nfkc(text)).strip()
    clause = _CLAUSE_END.split(folded, maxsplit=1)[0].strip(_TRAILING) or folded.strip(_TRAILING)
    if len(clause) > GIST_CHARS:
        clause = clause[:GIST_CHARS].rstrip(_TRAILING) + "…"
    return clause


def _substantive(text: str) -> bool:
    """Greetings and thanks say nothing about where the conversation was."""
    findings = find_not_reusable(text)
    return bool(text.strip()) and not any(f.detail == "greeting" for f in findings)


def _slot_text(slots: Mapping[str, Any], lang: str) -> str:
    parts = []
    for name in sorted(slots)[:MAX_SLOTS]:
        value = slots[name]
        shown = value if isinstance(value, str) else orjson.dumps(value).decode()
        if len(shown) > SLOT_VALUE_CHARS:
            shown = shown[:SLOT_VALUE_CHARS] + "…"
        parts.append(f"{name}={shown}")
    if len(slots) > MAX_SLOTS:
        parts.append("…")
    return ("、" if lang == "zh" else ", ").join(parts)


def summarize(
    turns: Sequence[Mapping[str, Any]],
    slots: Mapping[str, Any],
    *,
    lang: str | None = None,
    outline_only: bool = False,
) -> SessionSummary | None:
    """A one-line summary and a resume hint, or None when there is nothing to keep.

    `outline_only` leaves the user's words out (turn count and slots only): the fallback
    when the gate refuses a summary that quotes them (e.g. the gist reads as a question).
    """
    user_texts = [
        str(t.get("content", "")) for t in turns if t.get("role") == "user" and t.get("content")
    ]
    said = [t for t in user_texts if _substantive(t)]
    if not said and not slots:
        return None
    lang = lang or detect_lang(" ".join(user_texts) or " ".join(map(str, slots.values())))
    n = len(user_texts)
    first = gist(said[0]) if said and not outline_only else ""
    last = gist(said[-1]) if said and not outline_only else ""
    if last == first:
        last = ""
    known = _slot_text(slots, lang)
    if lang == "zh":
        summary = f"会话摘要（{n}轮用户发言）"
        if first:
            summary += f"：用户谈到「{first}」"
        if last:
            summary += f"，最后说到「{last}」"
        if known:
            summary += f"；已收集：{known}"
        hint = "上次会话"
        hint += f"停在「{last or first}」" if first else f"共{n}轮"
        if known:
            hint += f"；已知 {known}，无需重问"
        hint += "；可从这里接着聊。"
        summary += "。"
    else:
        summary = f"Session summary ({n} user turns)"
        if first:
            summary += f": the user talked about \u201c{first}\u201d"
        if last:
            summary += f", and last about \u201c{last}\u201d"
        if known:
            summary += f"; collected: {known}"
        summary += "."
        hint = "Last session"
        hint += f" ended at \u201c{last or first}\u201d" if first else f" had {n} user turns"
        if known:
            hint += f"; already known: {known} (do not ask again)"
        hint += "; pick up from there."
    return SessionSummary(summary[:MAX_STATEMENT], hint[:MAX_STATEMENT], lang, n)
