"""How stored rows read in answers: the public JSON of a fact, candidate, job, audit event
and API key. Routers shape their answers with these; the write path (app/writer.py) puts
a written fact in its outcome with `fact_json`.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

Row = Mapping[str, Any]  # an asyncpg.Record, or a dict with the same keys


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def fact_json(row: Row) -> dict[str, Any]:
    """The public shape of a fact (docs/data-model.md#the-fact)."""
    return {
        "id": str(row["id"]),
        "user_id": row["user_id"],
        "scope": row["scope"],
        "type": row["type"],
        "predicate": row["predicate"],
        "value": row["value"],
        "statement": row["statement"],
        "source": {
            "kind": row["source_kind"],
            "trace_id": row["source_trace_id"],
            "turn_id": row["source_turn_id"],
            "evidence": row["source_evidence"],
            "writer": str(row["source_writer"]) if row["source_writer"] else None,
        },
        "confidence": round(float(row["confidence"]), 4),
        "sensitivity": row["sensitivity"],
        "valid_from": _iso(row["valid_from"]),
        "valid_to": _iso(row["valid_to"]),
        "expires_at": _iso(row["expires_at"]),
        "occurred_at": _iso(row["occurred_at"]),
        "keys": list(row["keys"] or []),
        "status": row["status"],
        "version": row["version"],
        "supersedes": str(row["supersedes"]) if row["supersedes"] else None,
        "contested": row["contested"],
        "observations": row["observations"],
        "hits": row["hits"],
        "last_hit_at": _iso(row["last_hit_at"]),
        "feedback": {"useful": row["feedback_up"], "not_useful": row["feedback_down"]},
        "embedding_model": row["embedding_model"],
        "policy_version": row["policy_version"],
        "created_at": _iso(row["created_at"]),
        "updated_at": _iso(row["updated_at"]),
    }


def candidate_json(row: Row) -> dict[str, Any]:
    return {
        "id": str(row["id"]),
        "user_id": row["user_id"],
        "scope": row["scope"],
        "type": row["type"],
        "predicate": row["predicate"],
        "value": row["value"],
        "statement": row["statement"],
        "source_kind": row["source_kind"],
        "evidence": row["evidence"],
        "occurred_at": row["occurred_at"].isoformat() if row["occurred_at"] else None,
        "keys": list(row["keys"] or []),
        "confidence": round(float(row["confidence"]), 4),
        "sensitivity": row["sensitivity"],
        "reason": row["reason"],
        "observations": row["observations"],
        "status": row["status"],
        "fact_id": str(row["fact_id"]) if row["fact_id"] else None,
        "expires_at": row["expires_at"].isoformat() if row["expires_at"] else None,
        "created_at": row["created_at"].isoformat(),
        "updated_at": row["updated_at"].isoformat(),
    }


def job_json(row: Row) -> dict[str, Any]:
    """The public shape of a job (GET /v1/jobs/{id}): no payload (it holds the turns)."""
    out: dict[str, Any] = {
        "id": str(row["id"]),
        "kind": row["kind"],
        "state": row["state"],
        "attempts": row["attempts"],
        "decisions": row["decisions"],
        "created_at": row["created_at"].isoformat(),
        "updated_at": row["updated_at"].isoformat(),
    }
    if row["user_id"] is not None:
        out["user_id"] = row["user_id"]
    if row["error"]:
        out["error"] = row["error"]
    if row["result"] is not None:
        out["result"] = row["result"]
    return out


def audit_json(row: Row) -> dict[str, Any]:
    return {
        "id": row["id"],
        "action": row["action"],
        "decision": row["decision"],
        "reason": row["reason"],
        "user_id": row["user_id"],
        "actor": str(row["actor"]) if row["actor"] else None,
        "actor_role": row["actor_role"],
        "fact_id": str(row["fact_id"]) if row["fact_id"] else None,
        "candidate_id": str(row["candidate_id"]) if row["candidate_id"] else None,
        "source_kind": row["source_kind"],
        "trace_id": row["trace_id"],
        "policy_version": row["policy_version"],
        "detail": row["detail"],
        "created_at": row["created_at"].isoformat(),
    }


def key_json(row: Row) -> dict[str, Any]:
    return {
        "id": str(row["id"]),
        "name": row["name"],
        "prefix": row["prefix"],
        "role": row["role"],
        "scopes": list(row["scopes"]) if row["scopes"] is not None else None,
        "max_sensitivity": row["max_sensitivity"],
        "created_at": row["created_at"].isoformat(),
        "revoked_at": row["revoked_at"].isoformat() if row["revoked_at"] else None,
    }
