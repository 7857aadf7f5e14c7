"""Facts (docs/api.md#endpoints): the write and correction bodies, a fact as answered, the gate's
answer to a write, feedback and the audit trail."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from app.api.schemas.candidates import Candidate
from app.api.schemas.common import (
    FeedbackCounts,
    JsonObject,
    JsonValue,
    Out,
    Page,
    Predicate,
    RedactedNote,
    Responses,
    Scope,
    ScreenedLabel,
    Timestamp,
    Uuid,
)
from app.api.validation import (
    JSON_INT,
    MAX_KEYS,
    DateTime,
    Evidence,
    SearchKey,
    Statement,
)
from app.memory.model import FactType, Sensitivity, SourceKind

# --------------------------------------------------------------------------- requests


class SourceIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: SourceKind
    trace_id: ScreenedLabel | None = None
    turn_id: ScreenedLabel | None = None
    evidence: Evidence | None = None


class FactIn(BaseModel):
    """An explicit write (docs/api.md#endpoints). Size limits answer 413, not 422
    (docs/api.md#size-limits)."""

    model_config = ConfigDict(extra="forbid")
    type: FactType
    predicate: Predicate | None = None
    value: Any = None
    statement: Statement
    scope: Scope = "global"
    source: SourceIn | None = None
    confidence: float | None = Field(None, ge=0, le=1, strict=True)
    sensitivity: Sensitivity | None = None
    valid_from: DateTime | None = None
    valid_to: DateTime | None = None
    ttl_days: Annotated[int, Field(ge=1, le=36500), JSON_INT] | None = None
    consent: bool = Field(False, strict=True)
    occurred_at: DateTime | None = Field(
        None, description="When the event happened (an episode's date); shown in recall."
    )
    keys: list[SearchKey] = Field(
        default_factory=list,
        max_length=MAX_KEYS,
        description="Extra text to find the fact by (the turn before it, keyphrases): "
        "indexed for recall and screened by the gate like the statement, never injected.",
    )

    @model_validator(mode="after")
    def _shape(self) -> FactIn:
        if self.type is FactType.PROFILE and not self.predicate:
            raise ValueError("profile facts need a predicate")
        if self.type is FactType.EPISODIC and self.predicate:
            raise ValueError("episodic facts have no predicate")
        if self.valid_from and self.valid_to and self.valid_to <= self.valid_from:
            raise ValueError("valid_to must be after valid_from")
        if not self.statement.strip():
            raise ValueError("statement is blank")
        return self


CORRECTABLE = ("statement", "confidence", "sensitivity", "valid_from", "valid_to")
_PATCH_NEEDS_A_CHANGE: dict[str, Any] = {
    "anyOf": [
        {"required": ["value"]},
        *(
            {"required": [name], "properties": {name: {"not": {"type": "null"}}}}
            for name in CORRECTABLE
        ),
    ]
}


class FactPatch(BaseModel):
    """A correction: a new version through the gate (rule 1). It changes at least one of
    statement, value, confidence, sensitivity, valid_from, valid_to (a null other than
    `value`'s changes nothing)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_PATCH_NEEDS_A_CHANGE)
    statement: Statement | None = None
    value: Any = None
    source: SourceIn | None = None
    confidence: float | None = Field(None, ge=0, le=1, strict=True)
    sensitivity: Sensitivity | None = None
    valid_from: DateTime | None = None
    valid_to: DateTime | None = None
    consent: bool = Field(False, strict=True)


class FeedbackIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    useful: bool = Field(strict=True)
    note: RedactedNote | None = None


# ---------------------------------------------------------------------------- answers


class FactSource(Out):
    kind: SourceKind
    trace_id: str | None
    turn_id: str | None
    evidence: str | None
    writer: Uuid | None = Field(description="the key that wrote it")


class Fact(Out):
    """The public shape of a fact (docs/data-model.md#the-fact)."""

    id: Uuid
    user_id: str
    scope: str
    type: FactType
    predicate: str | None
    value: JsonValue
    statement: str
    source: FactSource
    confidence: float
    sensitivity: Sensitivity
    valid_from: Timestamp | None
    valid_to: Timestamp | None
    expires_at: Timestamp | None
    occurred_at: Timestamp | None
    keys: list[str]
    status: Literal["active", "superseded", "archived", "deleted"]
    version: int
    supersedes: Uuid | None
    contested: bool
    observations: int
    hits: int
    last_hit_at: Timestamp | None
    feedback: FeedbackCounts
    embedding_model: str | None
    policy_version: str
    created_at: Timestamp | None
    updated_at: Timestamp | None


class FactPage(Page[Fact]):
    """Facts, newest first."""


class FeedbackOut(Out):
    id: Uuid
    confidence: float
    feedback: FeedbackCounts


class AuditEvent(Out):
    """One audit record: who did what to which fact or candidate, never its text."""

    id: int
    action: str
    decision: str | None
    reason: str | None
    user_id: str | None
    actor: Uuid | None
    actor_role: str | None
    fact_id: Uuid | None
    candidate_id: Uuid | None
    source_kind: str | None
    trace_id: str | None
    policy_version: str | None
    detail: JsonObject | None
    created_at: Timestamp


class AuditPage(Page[AuditEvent]):
    """Audit records, newest first."""


class GateDetail(Out):
    """Why the gate refused or held a write: the detector, the field it read and, for a
    semantic class, its score and the tenant's threshold. Never the text itself. Other
    keys name what a rule saw (e.g. `categories`, `awaiting`, `history_of`)."""

    model_config = ConfigDict(extra="allow")
    detector: str | None = Field(None, description="e.g. ignore_instructions, semantic_injection")
    detectors: list[str] | None = None
    kind: Literal["rule", "semantic"] | None = None
    field: Literal["statement", "predicate", "value", "evidence", "keys", "content"] | None = None
    score: float | None = Field(None, ge=0, le=1)
    threshold: float | None = Field(None, ge=0, le=1)
    semantic: str | None = Field(
        None, description='whether the semantic classes ran: "on", or "off: why"'
    )


class CandidateRef(Out):
    id: Uuid


class WriteResult(Out):
    """The answer to a gated write (docs/gate.md#decisions): only the keys that apply are
    present."""

    decision: Literal["written", "merged", "superseded", "pending", "rejected"]
    reason: str | None = None
    fact: Fact | None = None
    superseded: list[Uuid] | None = None
    # the candidate's id; the candidate itself when a confirmation answers
    candidate: Uuid | Candidate | CandidateRef | None = None
    detail: GateDetail | None = Field(None, description="set when rejected or held by the gate")


# A write through the gate answers by its decision (docs/gate.md#decisions).
WRITE_OUTCOMES: Responses = {
    200: {
        "model": WriteResult,
        "description": "merged, or rejected by the policy (the body says why)",
    },
    201: {"model": WriteResult, "description": "written or superseded"},
    202: {
        "model": WriteResult,
        "description": "pending: held as a candidate or waiting for the user",
    },
}
