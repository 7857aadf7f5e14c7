"""Earlier rounds' cases that a later refit of the semantic classes moved, listed by test id
so the round modules keep their own lists as they were written:

- tests/data/gate_rounds/r14-shifts.json (docs/gate.md "Round 14"), r17-shifts.json
  ("Round 17"), r19-shifts.json ("Round 19", the exemplar bank) and r22-shifts.json
  ("Round 22", the bank's new rows): `stored` and `refused` are cases the refit moved to
  the wrong side (a harmful text it stores, a benign text it refuses), each a strict xfail;
- `fixed` (r17, r19, r22): cases a round module or an earlier file marks as a known miss
  (strict xfail) that the refit moved to the right side; their xfail is taken off, so they
  are asserted again.

The files are read in that order and a later file's word on a case wins over an earlier
one's (12 of r14's cases moved back with round 17, some of r17's with round 19, and round
22 moved two of the fixed ones back to the wrong side)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROUNDS = Path(__file__).resolve().parents[1] / "data" / "gate_rounds"
SHIFTS = tuple(ROUNDS / f"{r}-shifts.json" for r in ("r14", "r17", "r19", "r22"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    reasons: dict[str, str] = {}
    fixed: set[str] = set()
    for path in SHIFTS:
        data = json.loads(path.read_text(encoding="utf-8"))
        tag = path.name.split("-")[0]
        for side in ("stored", "refused"):
            for nid in data.get(side, {}):
                reasons[nid] = f"{tag} refit: {side}"
                fixed.discard(nid)
        for nid in data.get("fixed", {}):
            fixed.add(nid)
            reasons.pop(nid, None)
    for item in items:
        if item.nodeid in fixed:
            item.own_markers[:] = [m for m in item.own_markers if m.name != "xfail"]
            reasons.pop(item.nodeid, None)
        reason = reasons.get(item.nodeid)
        if reason is not None:
            item.add_marker(pytest.mark.xfail(strict=True, reason=reason))
