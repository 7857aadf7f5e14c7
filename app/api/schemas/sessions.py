"""Session memory (docs/sessions.md, docs/sessions.md#turns-and-slots): turns, slots, a session as
read, its close."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Path
from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from app.api.schemas.common import (
    JsonObject,
    Out,
    RequiredScreenedLabel,
    Scope,
    ScreenedLabel,
    Timestamp,
    UserIdField,
    Uuid,
)
from app.api.screened import refuse_secret_identifier
from app.api.validation import ID, MAX_ID, Content

SESSION_ID = ID  # like user ids: never only dots

SessionId = Annotated[
    str,
    Path(min_length=1, max_length=MAX_ID, pattern=SESSION_ID),
    AfterValidator(refuse_secret_identifier),
]

Role = Literal["user", "assistant", "system", "tool"]


class TurnIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    user_id: UserIdField
    role: Role
    content: Content
    turn_id: RequiredScreenedLabel | None = None
    trace_id: ScreenedLabel | None = None
    scope: Scope | None = None


class TurnAppended(Out):
    session_id: str
    user_id: str
    scope: str
    turn_id: str
    turns: int = Field(description="the session's turn count now")
    created: bool = Field(description="this turn opened the session")
    job_id: Uuid | None = Field(description="the extraction job of a user turn")


class TurnRetried(Out):
    """A retried turn (a turn_id the session already has): appended once, not again."""

    session_id: str
    user_id: str
    turn_id: str
    duplicate: Literal[True]
    created: Literal[False]


class SessionTurn(Out):
    turn_id: str
    role: Role
    content: str = Field(description="redacted")
    at: Timestamp
    trace_id: str | None


class Session(Out):
    id: str
    user_id: str
    scope: str
    slots: JsonObject
    turns: list[SessionTurn]
    turn_count: int
    created_at: Timestamp
    last_turn_at: Timestamp | None
    closed: bool
    closed_at: Timestamp | None
    summary: str | None
    resume_hint: str | None
    fact_id: Uuid | None


class Slots(Out):
    id: str
    user_id: str
    slots: JsonObject


class Closed(Out):
    """A closed session: its summary, kept as an episodic fact, and the resume hint."""

    id: str
    user_id: str
    closed: Literal[True]
    closed_at: Timestamp | None
    summary: str | None
    resume_hint: str | None
    fact_id: Uuid | None
    decision: str | None = Field(description="the gate's decision on the summary")
    reason: str | None
    already_closed: bool
