"""Operators (docs/api.md#endpoints, docs/architecture.md#observability): batch cleanup by filter,
re-embedding, tenant figures."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from app.api.schemas.common import FeedbackCounts, Out, Scope, Timestamp, UserIdField, Uuid
from app.api.validation import DateTime
from app.memory.model import FactType, SourceKind


class CleanupFilterIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    source_kind: SourceKind | None = None
    status: (
        Literal["active", "superseded", "archived", "pending", "promoted", "rejected", "expired"]
        | None
    ) = None
    type: FactType | None = None
    created_before: DateTime | None = None
    created_after: DateTime | None = None
    max_confidence: float | None = Field(None, ge=0, le=1, strict=True)
    user_id: UserIdField | None = None
    scope: Scope | None = None
    candidate: bool = Field(False, strict=True)


class CleanupIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    filter: CleanupFilterIn = Field(default_factory=CleanupFilterIn)
    action: Literal["archive", "delete"]
    dry_run: bool = Field(True, strict=True)


class CleanupResult(Out):
    """A dry run's count, or what a run touched (`by_user`: matches per user)."""

    dry_run: bool
    action: Literal["archive", "delete"]
    total: int
    by_user: dict[str, int]


class CleanupQueued(CleanupResult):
    """A run over the large-run threshold: queued, poll `GET /v1/jobs/{job_id}`."""

    job_id: Uuid


class FactFigures(Out):
    by_status: dict[str, int]
    active_by_type: dict[str, int]
    active_by_source_kind: dict[str, int]
    users: int


class Growth(Out):
    last_day: int
    last_week: int


class GateFigures(Out):
    by_decision: dict[str, int]
    by_reason: dict[str, int]


class CandidateFigures(Out):
    by_status: dict[str, int]


class Promotions(Out):
    total: int
    last_week: int


class Expiry(Out):
    candidates_expired: int
    facts_archived_by_reason: dict[str, int]


class RecallFigures(Out):
    total: int
    last_day: int
    with_facts: int
    hit_rate: float | None
    injected_facts: int
    injected_tokens: int
    avg_tokens: float | None
    by_tier: dict[str, int]


class SessionFigures(Out):
    open: int


class Stats(Out):
    """Tenant-wide figures (aggregates only, never content)."""

    facts: FactFigures
    growth: Growth
    gate: GateFigures
    candidates: CandidateFigures
    promotions: Promotions
    expiry: Expiry
    recall: RecallFigures
    feedback: FeedbackCounts
    sessions: SessionFigures
    tenant_id: Uuid
    at: Timestamp
