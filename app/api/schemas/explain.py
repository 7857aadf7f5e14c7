"""`POST /v1/admin/gate/explain`: one write or a conversation, and the screening trace
of each candidate."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from app.api.schemas.common import Out, UserIdField
from app.api.schemas.facts import FactIn, GateDetail
from app.api.schemas.observations import MessageIn

MAX_EXPLAIN_MESSAGES = 50

# Exactly one of the two, and not null: the schema says so, so clients and fuzzers know.
_ONE_OF: dict[str, Any] = {
    "oneOf": [
        {
            "required": ["fact"],
            "properties": {"fact": {"not": {"type": "null"}}, "messages": {"type": "null"}},
        },
        {
            "required": ["messages"],
            "properties": {"messages": {"not": {"type": "null"}}, "fact": {"type": "null"}},
        },
    ]
}


class ExplainIn(BaseModel):
    """One write (`fact`) or a conversation (`messages`), never both."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_ONE_OF)
    user_id: UserIdField = "explain"
    fact: FactIn | None = None
    messages: list[MessageIn] | None = Field(None, min_length=1, max_length=MAX_EXPLAIN_MESSAGES)

    @model_validator(mode="after")
    def _one_of(self) -> ExplainIn:
        if (self.fact is None) == (self.messages is None):
            raise ValueError("give exactly one of `fact` or `messages`")
        return self


class ExplainedCandidate(Out):
    statement: str = Field(description="redacted")
    type: str
    predicate: str | None
    source_kind: str | None
    turn_id: str | None
    decision: Literal["pass", "written", "merged", "superseded", "pending", "rejected"]
    reason: str | None
    detail: GateDetail
    semantic: str = Field(description='whether the semantic classes ran: "on", or "off: why"')
    semantic_scores: dict[str, float] = Field(description="the highest score per class")
    judge_asks: list[str] = Field(
        default_factory=list,
        description="borderline classes the tenant's LLM judge would be asked about "
        "(gate.judge; explain never calls it)",
    )
    rules: dict[str, list[str]] = Field(description="per field, the rule detectors that fire")


class Explained(Out):
    policy_version: str
    candidates: list[ExplainedCandidate]
    written: Literal[0]
