"""Pure scoring helpers for the eval: value matching, ratios, and the printed table.

No I/O here, so the scoring rules can be read (and unit-tested) apart from the runner.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

_NOISE = re.compile(r"[\s_\-.,;:!?。，、；：！？'\"“”‘’()（）]+")


def norm(value: Any) -> str:
    """A forgiving form of a value for matching gold to output ("Markdown_Table " ==
    "markdown table"): extractors legitimately differ in case, spacing and punctuation."""
    if value is None:
        return ""
    if not isinstance(value, str):
        value = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return _NOISE.sub("", value.lower())


def value_matches(actual: Any, expected: Any) -> bool:
    """Equal after normalization, or one contains the other ("peanut" / "peanuts",
    "Go 1.22" / "Go"): the gold names the thing, not the extractor's exact wording."""
    a, e = norm(actual), norm(expected)
    if not a or not e:
        return a == e
    return a == e or (min(len(a), len(e)) >= 2 and (a in e or e in a))


def item_matches(item: dict[str, Any], gold: dict[str, Any]) -> bool:
    """Does a stored fact/candidate (`predicate`, `value`, `statement`) satisfy a gold fact?"""
    if "predicate" in gold and gold["predicate"] != item.get("predicate"):
        return False
    if "statement_contains" in gold:
        needle = norm(gold["statement_contains"])
        hay = norm(item.get("statement")) + "|" + norm(item.get("value"))
        return needle in hay
    options = gold.get("value_any") or [gold.get("value")]
    return any(value_matches(item.get("value"), v) for v in options)


def ratio(num: float, den: float) -> float | None:
    return None if den == 0 else num / den


def fmt(value: float | None, pct: bool = True) -> str:
    if value is None:
        return "n/a"
    return f"{value * 100:.1f}%" if pct else f"{value:.3f}"


def mean(values: Iterable[float]) -> float | None:
    vals = list(values)
    return sum(vals) / len(vals) if vals else None


@dataclass
class Counter:
    """hits / total, with the ids of the misses kept for the report."""

    hits: int = 0
    total: int = 0
    misses: list[str] = field(default_factory=list)
    hit_ids: list[str] = field(default_factory=list)  # for "bad" counters (escapes, leaks)

    def add(self, ok: bool, ident: str) -> None:
        self.total += 1
        if ok:
            self.hits += 1
            self.hit_ids.append(ident)
        else:
            self.misses.append(ident)

    @property
    def rate(self) -> float | None:
        return ratio(self.hits, self.total)

    def cell(self) -> str:
        return f"{fmt(self.rate)} ({self.hits}/{self.total})"

    def as_dict(self) -> dict[str, Any]:
        return {
            "rate": self.rate,
            "hits": self.hits,
            "total": self.total,
            "hit_ids": self.hit_ids,
            "misses": self.misses,
        }


def table(rows: Sequence[tuple[str, str, str]], title: str) -> str:
    """A plain-text table: metric | value | note."""
    w0 = max([len("metric"), *(len(r[0]) for r in rows)])
    w1 = max([len("value"), *(len(r[1]) for r in rows)])
    line = f"+-{'-' * w0}-+-{'-' * w1}-+-{'-' * 40}"
    out = [title, line, f"| {'metric'.ljust(w0)} | {'value'.ljust(w1)} | note", line]
    for name, value, note in rows:
        if name.startswith("--"):
            out.append(f"| {name[2:].strip().upper().ljust(w0)} | {' ' * w1} |")
            continue
        out.append(f"| {name.ljust(w0)} | {value.ljust(w1)} | {note}")
    out.append(line)
    return "\n".join(out)
