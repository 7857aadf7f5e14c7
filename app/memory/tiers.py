"""Freshness tiers (docs/tiers.md, docs/recall.md): how much to trust memory
after a gap, from the time of the user's last interaction.

continue (≤ fresh_days): use memory as is. confirm (≤ stale_days): inject, but confirm
before relying on it. new (older): treat as a new user — inject almost nothing: only
explicit instructions of high confidence (allergies, hard constraints), phrased for
confirmation by the packer.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Literal, Protocol, TypeVar

from app.memory.model import SourceKind
from app.memory.policy import Policy

Tier = Literal["continue", "confirm", "new"]


class _Sourced(Protocol):
    @property
    def source_kind(self) -> SourceKind: ...

    @property
    def confidence(self) -> float: ...


T = TypeVar("T", bound=_Sourced)


def _aware(dt: datetime) -> datetime:
    return dt if dt.tzinfo is not None else dt.replace(tzinfo=UTC)


def tier(last_interaction: datetime | None, now: datetime, policy: Policy) -> Tier:
    """The tier for a gap; boundaries are inclusive (exactly `fresh_days` → continue).

    No interaction recorded → continue: there is no evidence that memory went stale.
    """
    if last_interaction is None:
        return "continue"
    gap_days = (_aware(now) - _aware(last_interaction)).total_seconds() / 86400.0
    if gap_days <= policy.recall.fresh_days:
        return "continue"
    if gap_days <= policy.recall.stale_days:
        return "confirm"
    return "new"


def admit_for_tier(facts: Sequence[T], current: Tier, policy: Policy) -> list[T]:
    """The facts the tier allows, order kept. Works on rows (before scoring, so `k` is
    spent on admissible facts) and on scored facts alike."""
    if current != "new":
        return list(facts)
    floor = policy.recall.new_tier_min_confidence
    return [
        f
        for f in facts
        if f.source_kind == SourceKind.EXPLICIT_INSTRUCTION and f.confidence >= floor
    ]
