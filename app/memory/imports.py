"""Imports from other memory stores, as pure data (docs/api.md#bulk-import): a mem0
memory as a candidate, candidates to and from the JSON a job row keeps, and the report.

mem0's `Memory.get_all()` answers `{"results": [{"id", "memory", "hash", "metadata",
"created_at", "updated_at", "user_id", ...}]}` (its platform adds `categories` and pages
with `count`/`next`). A memory is a free statement an LLM inferred from a conversation,
with no predicate: it becomes a `semantic` fact of source kind `imported` (authority 2,
like `agent_inference`: it never overrides what the user says to memgate), its
confidence from the policy (`imports.confidence`), valid from mem0's `updated_at`
(else `created_at`), its mem0 id and hash as its `source.turn_id` (`mem0:<id>#<hash>`)
and the import job as its `source.trace_id` (`import:<job id>`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from app.memory.model import Candidate, FactType, Origin, Sensitivity, SourceKind

MEM0 = "mem0"
JSONL = "jsonl"
FORMATS = (JSONL, MEM0)
DECISIONS = ("written", "superseded", "merged", "pending", "rejected")


@dataclass(frozen=True)
class Mem0Memory:
    """The fields of one mem0 memory memgate reads (the rest is left behind)."""

    id: str
    memory: str
    user_id: str
    hash: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None


def mem0_records(doc: Any) -> list[Any] | None:
    """The memories of a mem0 export document: `{"results": [...]}` (get_all, the
    platform's pages), `{"memories": [...]}`, or a bare list; None when `doc` is one
    memory rather than a document."""
    if isinstance(doc, list):
        return doc
    if isinstance(doc, dict):
        for key in ("results", "memories"):
            if isinstance(doc.get(key), list) and "memory" not in doc:
                return list(doc[key])
    return None


MAX_LABEL = 200  # a fact's source.turn_id


def provenance(m: Mem0Memory) -> str:
    """Where the fact came from, as its `source.turn_id`: `mem0:<id>#<hash>` (the hash
    left out when the two do not fit). Not the evidence: that field is screened as the
    words of a turn, and a line of provenance is not one."""
    label = f"mem0:{m.id}"
    if m.hash and len(label) + 1 + len(m.hash) <= MAX_LABEL:
        label += f"#{m.hash}"
    return label[:MAX_LABEL]


def from_mem0(m: Mem0Memory, scope: str = "global") -> Candidate:
    """A mem0 memory as a candidate: the gate and the conflict rules decide the rest."""
    return Candidate(
        user_id=m.user_id,
        type=FactType.SEMANTIC,
        statement=m.memory.strip(),
        scope=scope,
        source_kind=SourceKind.IMPORTED,
        turn_id=provenance(m),
        valid_from=m.updated_at or m.created_at,
        origin=Origin.IMPORTED,
    )


def with_policy_confidence(c: Candidate, confidence: float) -> Candidate:
    """An imported candidate without a confidence of its own gets the policy's."""
    if c.confidence is None and c.source_kind is SourceKind.IMPORTED:
        c.confidence = confidence
    return c


def _time(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def candidate_json(c: Candidate) -> dict[str, Any]:
    """A candidate as the JSON an import job keeps (its content passed the rules)."""
    return {
        "user_id": c.user_id,
        "type": c.type.value,
        "statement": c.statement,
        "value": c.value,
        "predicate": c.predicate,
        "scope": c.scope,
        "source_kind": c.source_kind.value if c.source_kind else None,
        "trace_id": c.trace_id,
        "turn_id": c.turn_id,
        "evidence": c.evidence,
        "confidence": c.confidence,
        "sensitivity": c.sensitivity.value if c.sensitivity else None,
        "valid_from": _time(c.valid_from),
        "valid_to": _time(c.valid_to),
        "ttl_days": c.ttl_days,
        "consent": c.consent,
        "origin": c.origin.value,
        "occurred_at": _time(c.occurred_at),
        "keys": list(c.keys),
    }


def _parse_time(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) else None


def candidate_of(doc: dict[str, Any]) -> Candidate:
    """The candidate `candidate_json` wrote."""
    return Candidate(
        user_id=doc["user_id"],
        type=FactType(doc["type"]),
        statement=doc["statement"],
        value=doc.get("value"),
        predicate=doc.get("predicate"),
        scope=doc.get("scope") or "global",
        source_kind=SourceKind(doc["source_kind"]) if doc.get("source_kind") else None,
        trace_id=doc.get("trace_id"),
        turn_id=doc.get("turn_id"),
        evidence=doc.get("evidence"),
        confidence=doc.get("confidence"),
        sensitivity=Sensitivity(doc["sensitivity"]) if doc.get("sensitivity") else None,
        valid_from=_parse_time(doc.get("valid_from")),
        valid_to=_parse_time(doc.get("valid_to")),
        ttl_days=doc.get("ttl_days"),
        consent=bool(doc.get("consent")),
        origin=Origin(doc.get("origin") or Origin.IMPORTED.value),
        occurred_at=_parse_time(doc.get("occurred_at")),
        keys=tuple(doc.get("keys") or ()),
    )


def counts(decisions: Iterable[str], extra: Sequence[str] = ()) -> dict[str, int]:
    """How many items got each decision (every decision named, 0 when none)."""
    seen = Counter(decisions)
    return {d: seen.get(d, 0) for d in (*DECISIONS, *extra)} | {
        d: n for d, n in seen.items() if d not in DECISIONS and d not in extra
    }
