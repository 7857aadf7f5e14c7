"""Regexes that skip a text holding none of the words every match needs.

The gate runs some six hundred regexes over every text a caller writes, and most of
them cannot match most texts: "transplant" or "入党" is in every match of a pattern, and
a text without it needs no scan. `rx` reads a pattern's parse tree once and finds
such needles — a set of strings one of which every match contains — and returns a
pattern that checks for them (a substring test over the lower-cased text) before it
scans. A pattern with no needle (one that can match without any fixed word, `\\d{6}`)
is returned as it is.

The check is a necessary condition by construction, so a guarded pattern finds exactly
what the plain one finds; tests/unit/test_prefilter.py compares the two over the texts
of the gate corpus and the eval data. Needles are compared lower-cased, which is sound
with or without IGNORECASE: the only characters Python's case-insensitive matching takes
for an ASCII letter beyond what `str.lower` gives are 'ı' and 'İ' (for i) and 'ſ' (for
s), folded here too ('İ' would otherwise lower to two characters); a cased non-ASCII
letter never becomes part of a needle.
"""

from __future__ import annotations

import functools
import math
import re
import threading
from collections.abc import Iterator
from re import _constants as sre  # type: ignore[attr-defined]  # the parse tree's opcodes
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

import ahocorasick

# Characters re's IGNORECASE matches to an ASCII letter that str.lower() does not give as
# that letter: 'ı' and 'ſ' stay themselves, and 'İ' becomes two characters ("i" and a
# combining dot), which would split a needle ("SİN" holds "sin" for re, not "si̇n").
_CASE_EXTRA = str.maketrans({"ı": "i", "ſ": "s", "İ": "i"})
_REPEATS = (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT)
_MAX_NEEDLES = 400  # beyond this a union of alternatives costs more than it saves

Needles = frozenset[str]


def fold(text: str) -> str:
    """The text as needles are looked for in it: lower-cased, one character for one, every
    character re's IGNORECASE reads as an ASCII letter written as that letter."""
    if text.isascii():
        return text.lower()
    if "ı" in text or "ſ" in text or "İ" in text:
        text = text.translate(_CASE_EXTRA)
    return text.lower()


def _safe(code: int) -> str | None:
    """The literal as a needle character, or None when case folding could make it
    unsound (a cased letter outside ASCII)."""
    ch = chr(code)
    if ch.isascii():
        return ch.lower()
    return ch if ch.lower() == ch == ch.upper() else None


def _score(needles: Needles) -> float:
    """Higher is more selective: long words, few of them."""
    return min(map(len, needles)) * 2.0 - math.log2(len(needles))


def needles_of(items: Any) -> Needles | None:
    """A set of strings one of which every match of the parsed sequence holds, or None
    when it can match without any (an empty branch, an optional group, only classes)."""
    options: list[Needles] = []
    run: list[str] = []

    def close() -> None:
        if run:
            options.append(frozenset(("".join(run),)))
            run.clear()

    for op, av in items:
        if op is sre.LITERAL:
            ch = _safe(av)
            if ch is not None:
                run.append(ch)
                continue
            close()
            continue
        close()
        found: Needles | None = None
        if op is sre.SUBPATTERN:
            found = needles_of(av[3])
        elif op is sre.ATOMIC_GROUP:
            found = needles_of(av)
        elif op in _REPEATS:
            if av[0] >= 1:
                found = needles_of(av[2])
        elif op is sre.BRANCH:
            union: set[str] = set()
            for branch in av[1]:
                sub = needles_of(branch)
                if sub is None:
                    union = set()
                    break
                union |= sub
            if union and len(union) <= _MAX_NEEDLES:
                found = frozenset(union)
        if found:
            options.append(found)
    close()
    if not options:
        return None
    return max(options, key=_score)


def find_needles(pattern: str, flags: int = 0) -> Needles | None:
    try:
        parsed = sre_parse.parse(pattern, flags)
    except Exception:
        return None
    return needles_of(parsed.data)


# Every guarded pattern's needles in one Aho–Corasick automaton: one pass over a text finds
# which patterns may match it, and each pattern's check is a set lookup. Built on the first
# check; a pattern made after it (a few are made at run time) rebuilds it (~5 ms) on the
# next check. An index is one tuple, swapped whole: (automaton, needle number -> the
# patterns holding it, how many patterns it covers).
_Index = tuple[Any, list[frozenset[int]], int]
_patterns: list[Guarded] = []
_lock = threading.Lock()
_index: _Index | None = None
_last: tuple[str, _Index | None, set[int]] = ("", None, set())  # the last text's answer


def _register(pattern: Guarded) -> int:
    with _lock:
        _patterns.append(pattern)
        return len(_patterns) - 1


def _build() -> _Index:
    global _index
    with _lock:
        if _index is not None and _index[2] == len(_patterns):
            return _index  # another thread built it
        owners: dict[str, set[int]] = {}
        for number, pattern in enumerate(_patterns):
            for needle in pattern.needles:
                owners.setdefault(needle, set()).add(number)
        automaton = ahocorasick.Automaton()
        for i, needle in enumerate(owners):
            automaton.add_word(needle, i)
        automaton.make_automaton()
        _index = (automaton, [frozenset(o) for o in owners.values()], len(_patterns))
        return _index


def alive(text: str) -> set[int]:
    """The guarded patterns (by number) one of whose needles the text holds: the ones
    that may match it."""
    global _last
    index = _index
    if index is None or index[2] != len(_patterns):
        index = _build()
    last = _last
    if last[0] is text and last[1] is index:
        return last[2]
    automaton, owners, _ = index
    out: set[int] = set()
    for i in {i for _, i in automaton.iter(fold(text))}:
        out |= owners[i]
    _last = (text, index, out)
    return out


class Guarded:
    """A compiled pattern behind its needles: the same methods, the same results."""

    __slots__ = ("_number", "_p", "flags", "groupindex", "groups", "needles", "pattern")

    def __init__(self, compiled: re.Pattern[str], needles: Needles) -> None:
        self._p = compiled
        self.needles = tuple(sorted(needles, key=len, reverse=True))
        self.pattern = compiled.pattern
        self.flags = compiled.flags
        self.groups = compiled.groups
        self.groupindex = compiled.groupindex
        self._number = _register(self)

    def _may(self, text: str) -> bool:
        """One of the needles is in the text: the pattern may match it."""
        return self._number in alive(text)

    def search(self, string: str, *args: Any) -> re.Match[str] | None:
        return self._p.search(string, *args) if self._number in alive(string) else None

    def match(self, string: str, *args: Any) -> re.Match[str] | None:
        return self._p.match(string, *args) if self._number in alive(string) else None

    def fullmatch(self, string: str, *args: Any) -> re.Match[str] | None:
        return self._p.fullmatch(string, *args) if self._number in alive(string) else None

    def finditer(self, string: str, *args: Any) -> Iterator[re.Match[str]]:
        return self._p.finditer(string, *args) if self._number in alive(string) else iter(())

    def findall(self, string: str, *args: Any) -> list[Any]:
        return self._p.findall(string, *args) if self._number in alive(string) else []

    def sub(self, repl: Any, string: str, count: int = 0) -> str:
        return self._p.sub(repl, string, count) if self._number in alive(string) else string

    def subn(self, repl: Any, string: str, count: int = 0) -> tuple[str, int]:
        return self._p.subn(repl, string, count) if self._number in alive(string) else (string, 0)

    def split(self, string: str, maxsplit: int = 0) -> list[str | Any]:
        return self._p.split(string, maxsplit) if self._number in alive(string) else [string]

    def __repr__(self) -> str:
        return f"Guarded({self._p!r}, needles={len(self.needles)})"


@functools.lru_cache(maxsize=1024)
def rx(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """`re.compile`, with the needle check in front when the pattern has needles. Cached,
    like re's own compile: a few patterns are built at run time."""
    compiled = re.compile(pattern, flags)
    needles = find_needles(pattern, flags)
    if not needles:
        return compiled
    return Guarded(compiled, needles)  # type: ignore[return-value]  # duck-typed Pattern
