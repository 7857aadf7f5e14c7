"""The user's own routes (docs/api.md#endpoints `/v1/me`, §11): tokens, their facts and candidates,
export and forget-me."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.api.schemas.candidates import Candidate
from app.api.schemas.common import Out, Page, Timestamp, Uuid
from app.api.schemas.facts import AuditEvent, Fact
from app.api.schemas.sessions import Session
from app.api.validation import JSON_INT
from app.memory.model import Sensitivity

DEFAULT_TTL_S = 3600
MAX_TTL_S = 30 * 24 * 3600


class TokenIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ttl_seconds: Annotated[int, Field(ge=1, le=MAX_TTL_S), JSON_INT] = DEFAULT_TTL_S
    link: bool = Field(
        False,
        strict=True,
        description="also answer a one-time `login_url` for the /me page (10 minutes)",
    )


class Token(Out):
    """A user token (mgu_…), shown once: it sees what the key that minted it sees."""

    token: str
    user_id: str
    expires_at: Timestamp
    scopes: list[str] | None
    max_sensitivity: Sensitivity
    login_url: str | None = Field(
        None,
        description="with `link: true`: a one-time path (/me/login?code=...) that signs a "
        "browser in to the /me page as this token; shown once",
    )


class MyFact(Fact):
    why: str = Field(description="why memgate keeps it, in the user's words")


class MyFactPage(Page[MyFact]):
    """The user's facts, newest first, each with why it is kept."""


class ExportedFact(MyFact):
    history: list[Uuid] = Field(description="the version chain, oldest first")


class ExportedState(Out):
    last_interaction_at: Timestamp | None
    last_session_id: str | None
    last_session_hint: str | None


class ExportedRecall(Out):
    trace_id: str
    scope: str | None
    fact_ids: list[Uuid]
    tokens: int
    tier: str | None
    created_at: Timestamp | None


class Export(Out):
    """Everything kept about the user that this token may see."""

    user_id: str
    exported_at: Timestamp
    facts: list[ExportedFact]
    candidates: list[Candidate]
    sessions: list[Session]
    state: ExportedState
    recalls: list[ExportedRecall]
    audit: list[AuditEvent]


class Forgotten(Out):
    user_id: str
    status: Literal["forgotten"]
    deleted: dict[str, int] = Field(description="what was erased, per kind")
