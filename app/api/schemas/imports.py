"""Bulk writes and imports (docs/api.md#bulk-import): a batch of one user's facts, the
lines of an import (generic JSONL or mem0 memories), and their answers."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.api.schemas.common import Out, RequiredScreenedLabel, UserIdField, Uuid
from app.api.schemas.facts import Fact, FactIn, GateDetail
from app.api.validation import NO_NUL, Statement

MAX_BATCH_ITEMS = 500  # app.importer.BATCH_MAX_ITEMS; more answers 413


class FactBatchIn(BaseModel):
    """Up to 500 writes for one user, each the body of `POST /v1/users/{u}/facts`,
    decided in order. `dry_run`: the gate's screening per item, nothing written."""

    model_config = ConfigDict(extra="forbid")
    # Size limits answer 413 (docs/api.md#size-limits): the count is checked by hand.
    items: list[FactIn] = Field(min_length=1, json_schema_extra={"maxItems": MAX_BATCH_ITEMS})
    dry_run: bool = Field(False, strict=True)


class BatchItemResult(Out):
    """One item's answer: the body a single write would have answered, and its index in
    the batch (from 0). A dry run answers `pass` for an item the screening lets through."""

    index: int
    decision: Literal["written", "merged", "superseded", "pending", "rejected", "pass"]
    reason: str | None = None
    fact: Fact | None = None
    superseded: list[Uuid] | None = None
    candidate: Uuid | None = None
    detail: GateDetail | None = None


class FactBatchOut(Out):
    items: list[BatchItemResult]
    summary: dict[str, int] = Field(
        description="how many items got each decision (written, superseded, merged, "
        "pending, rejected; pass in a dry run)"
    )
    dry_run: bool


class ImportLine(FactIn):
    """A line of a generic (`jsonl`) import: a fact's body, whose user it is about and,
    optionally, the id it had in the store it comes from (reported and kept as the fact's
    `source.turn_id` when the line gives no source). Without `source`, the fact's source
    kind is `imported`."""

    user_id: UserIdField
    id: RequiredScreenedLabel | None = None


class Mem0Memory(BaseModel):
    """A memory of mem0's `Memory.get_all()` or its platform export. Other keys
    (`agent_id`, `run_id`, `categories`, `score`...) are allowed and left behind."""

    model_config = ConfigDict(extra="allow")
    id: RequiredScreenedLabel
    memory: Statement
    user_id: UserIdField
    hash: str | None = Field(None, max_length=128, pattern=NO_NUL)
    metadata: dict[str, Any] | None = None
    created_at: str | None = Field(None, max_length=64, description="ISO 8601")
    updated_at: str | None = Field(None, max_length=64, description="ISO 8601")


class ImportQueued(Out):
    """An import accepted as a job: poll `GET /v1/jobs/{job_id}` for `result.done` of
    `result.total` and, when it is done, the report in `decisions`."""

    job_id: Uuid
    total: int = Field(description="the items read")
    format: Literal["jsonl", "mem0"]
    dry_run: bool
