"""The labeled eval data: loading, request-body shorthand, and schema validation.

Kept apart from the runner so `tests/unit/test_eval_data.py` can validate the files in
CI without starting any server: broken data should fail fast, not halfway through a run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from app.memory.model import Decision, Reason, SourceKind

DATA_DIR = Path(__file__).resolve().parent.parent / "tests" / "data" / "eval"

MIN_TURNS = 150
MIN_QUERIES = 80

DECISIONS = frozenset(d.value for d in Decision)
REASONS = frozenset(r.value for r in Reason)
SOURCE_KINDS = frozenset(k.value for k in SourceKind)
OUTCOMES = frozenset({"written", "pending", "nothing"})
RULES = frozenset(
    {
        "explicit_correction",
        "authority",
        "same_source_later",
        "same_source_same_time",
        "same_value",
        "scope",
        "cardinality_many",
        "older_history",
        "episodic",
    }
)
STATES = frozenset({"active", "superseded", "deleted", "expired"})
TIERS = frozenset({"continue", "confirm", "new"})
ROLES = frozenset({"agent", "admin", "scoped"})
MESSAGE_ROLES = frozenset({"user", "assistant", "system", "tool"})
MESSAGE_FIELDS = frozenset({"role", "content", "turn_id"})
# Request fields of POST /facts (plus the `kind` shorthand); the API forbids extra fields,
# and a typo in a flow mapping would otherwise only surface as a 422 mid-run.
BODY_FIELDS = frozenset(
    {
        "type",
        "predicate",
        "value",
        "statement",
        "scope",
        "source",
        "kind",
        "confidence",
        "sensitivity",
        "valid_from",
        "valid_to",
        "ttl_days",
        "consent",
    }
)


@dataclass
class Suite:
    writes: list[dict[str, Any]]
    observations: list[dict[str, Any]]
    conflicts: list[dict[str, Any]]
    duplicates: list[dict[str, Any]]
    profiles: list[dict[str, Any]]
    queries: list[dict[str, Any]]
    tiers: list[dict[str, Any]]

    def labeled_turns(self) -> int:
        """Every labeled write or conversation turn (the issue asks for >= 150)."""
        n = len(self.writes)
        n += sum(len(c["messages"]) for c in self.observations)
        n += sum(len(s["steps"]) for s in self.conflicts)
        n += sum(len(g["writes"]) for g in self.duplicates)
        return n


def _load(name: str, key: str, data_dir: Path) -> list[dict[str, Any]]:
    with (data_dir / name).open(encoding="utf-8") as fh:
        doc = yaml.safe_load(fh) or {}
    return list(doc.get(key) or [])


def load_suite(data_dir: Path = DATA_DIR) -> Suite:
    recall_doc = yaml.safe_load((data_dir / "recall.yaml").read_text(encoding="utf-8")) or {}
    return Suite(
        writes=_load("writes.yaml", "cases", data_dir),
        observations=_load("observations.yaml", "cases", data_dir),
        conflicts=_load("conflicts.yaml", "scenarios", data_dir),
        duplicates=_load("duplicates.yaml", "groups", data_dir),
        profiles=list(recall_doc.get("profiles") or []),
        queries=list(recall_doc.get("queries") or []),
        tiers=list(recall_doc.get("tiers") or []),
    )


def request_body(body: dict[str, Any]) -> dict[str, Any]:
    """The API body from the data shorthand: `kind: X` -> `source: {kind: X}`, and
    `type` defaults to semantic (PATCH bodies have no type and are left alone)."""
    out = dict(body)
    kind = out.pop("kind", None)
    if kind is not None:
        out["source"] = {"kind": kind}
    return out


def post_body(body: dict[str, Any]) -> dict[str, Any]:
    out = request_body(body)
    out.setdefault("type", "semantic")
    return out


def messages_of(case: dict[str, Any]) -> list[dict[str, Any]]:
    """Observation messages; a plain string is a user turn."""
    return [
        {"role": "user", "content": m} if isinstance(m, str) else dict(m) for m in case["messages"]
    ]


# ---------------------------------------------------------------------------------------
# Validation: returns a list of problems (empty = valid)
# ---------------------------------------------------------------------------------------


def _check_expect(where: str, expect: Any, problems: list[str]) -> None:
    if not isinstance(expect, dict) or expect.get("decision") not in DECISIONS:
        problems.append(f"{where}: expect.decision must be one of {sorted(DECISIONS)}")
        return
    reason = expect.get("reason")
    if expect["decision"] == "rejected" and reason not in REASONS:
        problems.append(f"{where}: rejected needs a SPEC reason code, got {reason!r}")
    if reason is not None and reason not in REASONS:
        problems.append(f"{where}: unknown reason {reason!r}")


def _check_body(where: str, body: Any, problems: list[str]) -> None:
    if not isinstance(body, dict) or not isinstance(body.get("statement"), str):
        problems.append(f"{where}: body needs a statement")
        return
    extra = set(body) - BODY_FIELDS
    if extra:
        problems.append(f"{where}: unknown body fields {sorted(extra)}")
    kind = body.get("kind", (body.get("source") or {}).get("kind"))
    if kind is not None and kind not in SOURCE_KINDS:
        problems.append(f"{where}: unknown source kind {kind!r}")


def _check_fact_expectations(where: str, facts: Any, problems: list[str]) -> None:
    if not isinstance(facts, list) or not facts:
        problems.append(f"{where}: expect.facts must be a non-empty list")
        return
    for f in facts:
        if not isinstance(f, dict) or not (
            "value" in f or "value_any" in f or "statement_contains" in f
        ):
            problems.append(f"{where}: each fact needs value, value_any or statement_contains")


def validate(suite: Suite) -> list[str]:
    problems: list[str] = []
    ids: set[str] = set()

    def unique(where: str, ident: Any) -> None:
        if not isinstance(ident, str) or not ident:
            problems.append(f"{where}: missing id")
        elif ident in ids:
            problems.append(f"{where}: duplicate id {ident!r}")
        else:
            ids.add(ident)

    for c in suite.writes:
        where = f"writes/{c.get('id')}"
        unique(where, c.get("id"))
        if c.get("gold") not in ("good", "bad") or c.get("lang") not in ("zh", "en"):
            problems.append(f"{where}: gold must be good|bad and lang zh|en")
        if c.get("role", "agent") not in ROLES:
            problems.append(f"{where}: unknown role {c.get('role')!r}")
        _check_body(where, c.get("body"), problems)
        _check_expect(where, c.get("expect"), problems)
        exp = c.get("expect") or {}
        if c.get("gold") == "bad" and exp.get("decision") != "rejected":
            problems.append(f"{where}: a bad write must be expected rejected")

    for c in suite.observations:
        where = f"observations/{c.get('id')}"
        unique(where, c.get("id"))
        if c.get("gold") not in ("good", "bad") or c.get("lang") not in ("zh", "en"):
            problems.append(f"{where}: gold must be good|bad and lang zh|en")
        msgs = c.get("messages")
        if not isinstance(msgs, list) or not msgs:
            problems.append(f"{where}: messages must be a non-empty list")
        else:
            for m in messages_of(c):
                if (
                    m.get("role") not in MESSAGE_ROLES
                    or not isinstance(m.get("content"), str)
                    or set(m) - MESSAGE_FIELDS
                ):
                    problems.append(f"{where}: bad message {m!r}")
        exp = c.get("expect") or {}
        if exp.get("outcome") not in OUTCOMES:
            problems.append(f"{where}: expect.outcome must be one of {sorted(OUTCOMES)}")
        elif exp["outcome"] == "nothing":
            if c.get("gold") != "bad" or exp.get("facts"):
                problems.append(f"{where}: outcome nothing goes with gold bad and no facts")
        else:
            if c.get("gold") != "good":
                problems.append(f"{where}: a stored outcome goes with gold good")
            _check_fact_expectations(where, exp.get("facts"), problems)

    for s in suite.conflicts:
        where = f"conflicts/{s.get('id')}"
        unique(where, s.get("id"))
        if s.get("rule") not in RULES:
            problems.append(f"{where}: unknown rule {s.get('rule')!r}")
        steps = s.get("steps")
        if not isinstance(steps, list) or len(steps) < 2:
            problems.append(f"{where}: a conflict needs at least two steps")
            steps = []
        for i, step in enumerate(steps):
            if not step.get("patch_previous"):
                _check_body(f"{where}/step{i}", step.get("body"), problems)
            _check_expect(f"{where}/step{i}", step.get("expect"), problems)
        if not isinstance(s.get("final"), list) or not s["final"]:
            problems.append(f"{where}: final state missing")

    for g in suite.duplicates:
        where = f"duplicates/{g.get('id')}"
        unique(where, g.get("id"))
        if not isinstance(g.get("distinct"), int) or g["distinct"] < 1:
            problems.append(f"{where}: distinct must be a positive integer")
        writes = g.get("writes") or []
        if len(writes) < 2:
            problems.append(f"{where}: a duplicate group needs at least two writes")
        for w in writes:
            if w.get("via", "facts") == "facts":
                _check_body(where, w.get("body"), problems)
            elif not w.get("messages"):
                problems.append(f"{where}: observation write needs messages")

    keys: dict[str, dict[str, Any]] = {}
    for p in suite.profiles:
        for f in p.get("facts") or []:
            where = f"recall/profile {p.get('user')}/{f.get('key')}"
            if f.get("key") in keys:
                problems.append(f"{where}: duplicate fact key")
            keys[f.get("key")] = f
            if f.get("state", "active") not in STATES:
                problems.append(f"{where}: unknown state {f.get('state')!r}")
            _check_body(where, f.get("body"), problems)
    for q in suite.queries:
        where = f"recall/{q.get('id')}"
        unique(where, q.get("id"))
        if not q.get("query") or not q.get("user") or q.get("lang") not in ("zh", "en"):
            problems.append(f"{where}: query, user and lang (zh|en) are required")
        for field in ("needed", "ok", "forbidden"):
            for k in q.get(field) or []:
                if k not in keys:
                    problems.append(f"{where}: {field} names unknown fact key {k!r}")
        overlap = set(q.get("needed") or []) & set(q.get("forbidden") or [])
        if overlap:
            problems.append(f"{where}: keys both needed and forbidden: {sorted(overlap)}")
        for k in q.get("needed") or []:
            if k in keys and keys[k].get("state", "active") != "active":
                problems.append(f"{where}: needed key {k} is not active")
    for t in suite.tiers:
        where = f"tiers/{t.get('id')}"
        unique(where, t.get("id"))
        if t.get("expect") not in TIERS or not isinstance(t.get("gap_days"), (int, float)):
            problems.append(f"{where}: expect must be a tier and gap_days a number")
        if t.get("interaction") not in ("explicit", "none"):
            problems.append(f"{where}: interaction must be explicit|none")

    if suite.labeled_turns() < MIN_TURNS:
        problems.append(f"only {suite.labeled_turns()} labeled turns/writes (< {MIN_TURNS})")
    if len(suite.queries) < MIN_QUERIES:
        problems.append(f"only {len(suite.queries)} recall queries (< {MIN_QUERIES})")
    return problems
