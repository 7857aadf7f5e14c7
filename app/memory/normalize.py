"""Canonical forms of values and statements, so "Markdown 表格。" and "markdown表格" compare equal.

Used for conflict detection (same value = merge), free-statement dedupe, and tombstone
hashes (docs/lifecycle.md#tombstones: a deleted fact must not come back through re-extraction).
Pure.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import unicodedata
from functools import lru_cache
from typing import Any

from app.memory.text import nfkc

# Boolean synonyms fold to "1" / "0", so "yes", "是", True, 1 and "1" are one value.
_TRUE = frozenset("yes y true t on 是 是的 对 对的 好 好的 要 需要 有 可以 ✓ ✔".split())
_FALSE = frozenset("no n false f off 否 不 不是 不对 不要 不需要 没有 无 不可以 ✗ ✘".split())

_NUMBER = re.compile(r"[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:e[+-]?\d+)?")
_SPACE = re.compile(r"\s+")
_CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
# Spaces next to a CJK character carry no meaning ("我 喜欢 表格" = "我喜欢表格").
_CJK_SPACE = re.compile(rf"(?<=[{_CJK}])\s+|\s+(?=[{_CJK}])")
_SEPARATORS = re.compile(r"[\s_\-]+")


def _is_punct(ch: str) -> bool:
    return unicodedata.category(ch)[0] in "PS" and ch not in "+#%&@$"


def normalize_text(text: str) -> str:
    """NFKC, casefold, single spaces, no spaces around CJK, no leading/trailing punctuation."""
    folded = _SPACE.sub(" ", nfkc(text).casefold()).strip()
    folded = _CJK_SPACE.sub("", folded)
    start, end = 0, len(folded)
    while start < end and (_is_punct(folded[start]) or folded[start].isspace()):
        start += 1
    while end > start and (_is_punct(folded[end - 1]) or folded[end - 1].isspace()):
        end -= 1
    return folded[start:end]


# Pure functions of a statement, called for every fact of a conflict pool by every write
# (a batch of 500 asks for the same few hundred statements thousands of times): cached,
# but only for text that is stored, so screened (a refused secret must not rest in a
# process cache either): `statement_key` itself is not cached, it sees every candidate.
_STATEMENTS_CACHED = 16384


def statement_key(statement: str) -> str:
    """The statement with case, width, spacing and all punctuation folded away."""
    text = "".join(" " if _is_punct(ch) else ch for ch in normalize_text(statement))
    return _CJK_SPACE.sub("", _SPACE.sub(" ", text)).strip()


@lru_cache(maxsize=_STATEMENTS_CACHED)
def stored_statement_key(statement: str) -> str:
    """`statement_key` of a stored fact's statement (a conflict pool's), cached."""
    return statement_key(statement)


def _number(value: float) -> str:
    if math.isfinite(value) and value == int(value):
        return str(int(value))
    return repr(float(value))


def canonical_value(value: Any) -> Any:
    """A JSON-able canonical form: scalars become folded strings ("1.0" → "1", "是" → "1").

    Lists compare as sets (order and repeats do not make another value); dict keys sort.
    """
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int | float):
        return _number(float(value)) if isinstance(value, float) else str(value)
    if isinstance(value, str):
        text = normalize_text(value)
        if text in _TRUE:
            return "1"
        if text in _FALSE:
            return "0"
        if _NUMBER.fullmatch(text):
            return _number(float(text.replace(",", "")))
        return _SEPARATORS.sub(" ", text).strip()
    if isinstance(value, list | tuple | set | frozenset):
        items = {json.dumps(canonical_value(v), sort_keys=True, ensure_ascii=False) for v in value}
        return sorted(items)
    if isinstance(value, dict):
        return {normalize_predicate(str(k)): canonical_value(v) for k, v in value.items()}
    if value is None:
        return None
    return normalize_text(str(value))


def normalize_predicate(predicate: str | None) -> str:
    """snake_case, folded: "Preferred-Output Format" → "preferred_output_format"."""
    if not predicate:
        return ""
    return _SEPARATORS.sub("_", nfkc(predicate).casefold().strip()).strip("_")


def value_key(predicate: str | None, value: Any) -> str:
    """One string per (predicate, value) meaning: equal keys are the same assertion."""
    canon = json.dumps(canonical_value(value), sort_keys=True, ensure_ascii=False)
    return f"{normalize_predicate(predicate)}={canon}"


def _sha256(*parts: str) -> str:
    # A unit separator keeps ("a", "bc") and ("ab", "c") apart.
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()


def tombstone_hashes(
    scope: str,
    predicate: str | None,
    value: Any,
    statement: str | None,
    *,
    key: str | None = None,
) -> list[str]:
    """sha256 hex digests that identify deleted content: predicate+value, and statement.

    The scope is part of each digest, so a hash never matches across scopes even if a
    caller forgets to filter. Both the store (on delete) and the gate (on write) use this.
    `key`: `statement_key(statement)` when the caller computed it already.
    """
    hashes: list[str] = []
    if predicate and value is not None:
        hashes.append(_sha256("pv", scope, value_key(predicate, value)))
    if statement:
        if key is None:
            key = statement_key(statement)
        if key:
            hashes.append(_sha256("st", scope, key))
    return hashes


# Negation markers. Idioms that contain a negator but do not negate come out first
# ("不错" is good, "非常" is very, "不得不" is must, "not only" adds).
_NEG_IDIOMS = re.compile(
    r"不错|不少|不过|不仅|不但|不断|不管|不久|不同|不得不|不是不|并非不|没有不|没错|差不多|非常|"
    r"无论|无比|无限|莫名|\bnot\s+only\b|\bno\s+doubt\b|\bno\s+problem\b|\bnot\s+bad\b|"
    r"\bnothing\s+but\b",
    re.IGNORECASE,
)
_NEGATION = re.compile(
    r"不|没|别|勿|未|莫|甭|无|非|讨厌|拒绝|禁止|避免|戒了|"
    r"\b(?:not|no|never|none|nor|neither|without|dislikes?|hates?|avoids?|stop(?:ped)?|"
    r"refuses?|cannot)\b|n't\b|\bno\s+longer\b",
    re.IGNORECASE,
)


@lru_cache(maxsize=_STATEMENTS_CACHED)
def polarity(statement: str) -> int:
    """+1 for an affirmative statement, -1 for a negated one ("不喜欢", "don't like").

    Dedupe never merges opposite polarity (docs/conflicts.md#negation), whatever the similarity.
    """
    text = _NEG_IDIOMS.sub(" ", nfkc(statement).casefold().replace("’", "'"))
    return -1 if _NEGATION.search(text) else 1


@lru_cache(maxsize=_STATEMENTS_CACHED)
def stored_polarity(statement: str) -> int:
    """`polarity` of a stored fact's statement (a conflict pool's), cached as
    `stored_statement_key` is."""
    return polarity(statement)
