"""Admin (docs/api.md#endpoints, docs/architecture.md#configuration-and-policy): API keys and the
tenant's policy overrides."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from app.api.schemas.common import SCOPE, JsonObject, Out, Page, Timestamp, Uuid
from app.api.validation import NO_NUL
from app.memory.model import Sensitivity
from app.memory.screening import redact_free_text

SCOPE_PATTERN = SCOPE

# stored with its secrets redacted
KeyName = Annotated[str, Field(max_length=200, pattern=NO_NUL), AfterValidator(redact_free_text)]


class KeyCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: KeyName | None = None
    role: Literal["agent", "ops", "admin"]
    scopes: list[Annotated[str, Field(pattern=SCOPE_PATTERN, max_length=128)]] | None = Field(
        None, max_length=100
    )
    max_sensitivity: Literal["normal", "personal", "confidential", "restricted"] = "personal"


class ApiKey(Out):
    """A key as listed: never its secret, only its first characters."""

    id: Uuid
    name: str | None
    prefix: str
    role: Literal["agent", "ops", "admin", "user"]
    scopes: list[str] | None = Field(description="null: every scope")
    max_sensitivity: Sensitivity
    created_at: Timestamp
    revoked_at: Timestamp | None


class ApiKeyPage(Page[ApiKey]):
    """Keys within the caller's own rights."""


class NewApiKey(ApiKey):
    key: str = Field(description="the secret, shown only in this answer")


class Revoked(Out):
    id: Uuid
    status: Literal["revoked"]


class PolicyOut(Out):
    version: str = Field(description="computed from the effective policy")
    override: JsonObject = Field(description="the tenant's override, as stored")
    effective: JsonObject = Field(description="config/policy.yaml with the override merged")
