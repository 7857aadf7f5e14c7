"""Observations and jobs (docs/extraction.md#the-candidate-pool, docs/api.md#jobs): turns handed to
extraction, and the job that reads them."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from app.api.schemas.common import (
    JsonValue,
    Out,
    RequiredScreenedLabel,
    Scope,
    ScreenedLabel,
    Stored,
    Timestamp,
    Uuid,
)
from app.api.schemas.facts import GateDetail
from app.api.validation import Content

MAX_MESSAGES = 50


class MessageIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    role: Literal["user", "assistant", "system", "tool"]
    content: Content
    turn_id: RequiredScreenedLabel | None = None


class ObservationsIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # Size limits answer 413 (docs/api.md#size-limits), so the count is checked by hand, not by
    # pydantic.
    messages: list[MessageIn] = Field(min_length=1, json_schema_extra={"maxItems": MAX_MESSAGES})
    trace_id: ScreenedLabel | None = None
    scope: Scope = "global"
    session_id: ScreenedLabel | None = None
    # Where the turns come from; anything below a user's own words caps what they can
    # become (external_content never becomes memory).
    source_kind: (
        Literal[
            "user_message", "tool_observation", "agent_inference", "external_content", "document"
        ]
        | None
    ) = None


class JobDecision(Stored):
    """What the gate decided for one extracted candidate, or for one item of an import
    (`line`, `id`, `user_id`): only the keys that apply."""

    turn_id: str | None = None
    line: int | None = Field(None, description="an import's item: its line in the upload")
    id: str | None = Field(None, description="an import's item: its id in the store it left")
    user_id: str | None = None
    decision: str
    reason: str | None = None
    detail: GateDetail | None = None
    fact_id: Uuid | None = None
    candidate_id: Uuid | None = None


class Job(Out):
    """A job (GET /v1/jobs/{id}): never its payload (it holds the turns). `user_id`,
    `error` and `result` are present only when set."""

    id: Uuid
    kind: str = Field(description="observe, cleanup, reembed, import, purge")
    state: Literal["queued", "running", "done", "failed"]
    attempts: int
    decisions: list[JobDecision]
    created_at: Timestamp
    updated_at: Timestamp
    user_id: str | None = None
    error: str | None = None
    result: JsonValue = Field(
        None,
        description="what the job decided; a batch job (import, reembed, cleanup, purge) "
        "shows its progress here as it runs: `{total, done, ...}`, done == total when done",
    )
