"""Webhooks (docs/webhooks.md, docs/api.md#webhooks): endpoints, secrets shown once,
deliveries."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from app.api.schemas.common import JsonObject, Out, Page, Timestamp, Uuid
from app.api.validation import JSON_INT, NO_NUL
from app.memory.screening import redact_free_text

EventType = Literal[
    "fact.written",
    "fact.superseded",
    "fact.deleted",
    "candidate.promoted",
    "user.forgotten",
    "job.failed",
]
DeliveryState = Literal["pending", "delivered", "dead"]
Description = Annotated[
    str, Field(max_length=200, pattern=NO_NUL), AfterValidator(redact_free_text)
]


class EndpointCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    url: str = Field(
        min_length=1,
        max_length=2000,
        pattern=r"^https?://[^\s\x00]+$",
        description="https (http only in test/development), no credentials or fragment; "
        "a host that resolves to public addresses only",
    )
    events: list[EventType] = Field(min_length=1, max_length=6)
    description: Description | None = None


class SecretRotate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    grace_seconds: Annotated[
        int,
        Field(ge=0, le=7 * 86400, description="the old secret also signs for this long"),
        JSON_INT,
    ] = 86400


class Endpoint(Out):
    """An endpoint as listed: never its secret."""

    id: Uuid
    url: str
    description: str | None
    events: list[EventType]
    created_at: Timestamp
    updated_at: Timestamp
    previous_secret_until: Timestamp | None = Field(
        description="during a rotation's grace: until when the old secret also signs"
    )


class EndpointPage(Page[Endpoint]):
    """The tenant's endpoints."""


class EndpointWithSecret(Endpoint):
    secret: str = Field(description="whsec_…, shown only in this answer")


class Delivery(Out):
    id: Uuid
    webhook_id: str = Field(description="the webhook-id header: the same on every attempt")
    endpoint_id: Uuid
    event_type: EventType
    state: DeliveryState
    attempts: int
    next_attempt_at: Timestamp | None
    last_status: int | None
    last_error: str | None
    delivered_at: Timestamp | None
    created_at: Timestamp
    payload: JsonObject = Field(description="the body as sent: ids and metadata only")


class DeliveryPage(Page[Delivery]):
    """Deliveries of one endpoint, oldest first."""
