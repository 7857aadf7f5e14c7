"""The candidate pool (docs/extraction.md#the-candidate-pool): what extraction holds back until it
is promoted, confirmed by the user, rejected or expired."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from app.api.schemas.common import JsonValue, Out, Page, Timestamp, Uuid
from app.memory.model import FactType, Sensitivity, SourceKind


class Candidate(Out):
    id: Uuid
    user_id: str
    scope: str
    type: FactType
    predicate: str | None
    value: JsonValue
    statement: str
    source_kind: SourceKind
    evidence: str | None
    occurred_at: Timestamp | None
    keys: list[str]
    confidence: float
    sensitivity: Sensitivity
    reason: str | None = Field(description="why it waits, e.g. sensitive_needs_consent")
    observations: int
    status: Literal["pending", "promoted", "rejected", "expired", "deleted"]
    fact_id: Uuid | None = Field(description="the fact it became")
    expires_at: Timestamp | None
    created_at: Timestamp
    updated_at: Timestamp


class CandidatePage(Page[Candidate]):
    """Candidates, newest first."""
