"""What every resource shares: the field types of ids and scopes, the error envelope, the
list page, and the error statuses each family of routes declares.

Response models derive from `Out`, which forbids fields it does not name: a route that
starts returning a field its model lacks fails validation (a 500 in the tests, a
schema violation for schemathesis) instead of being dropped or going undocumented.
"""

from __future__ import annotations

from typing import Annotated, Any, Generic, Literal, TypeVar

from fastapi import Path
from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from app.api.screened import refuse_secret_identifier
from app.api.validation import ID, MAX_ID, NO_NUL, Label, RequiredLabel
from app.memory.screening import redact_free_text

USER_ID = ID  # 1-128 chars, never only dots (app.api.validation)
SCOPE = r"^(global|[a-z][a-z0-9_-]{0,31}:[A-Za-z0-9_.:@/-]{1,95})$"
PREDICATE = r"^[a-z][a-z0-9_]{0,63}$"

_Screened = AfterValidator(refuse_secret_identifier)
UserId = Annotated[str, Path(min_length=1, max_length=MAX_ID, pattern=USER_ID), _Screened]
# Body fields: the same checks as the path (an id or scope holding a secret is refused).
UserIdField = Annotated[str, Field(min_length=1, max_length=MAX_ID, pattern=USER_ID), _Screened]
Scope = Annotated[str, Field(pattern=SCOPE), _Screened]
Predicate = Annotated[str, Field(pattern=PREDICATE), _Screened]
# A caller's label (trace id, turn id): free text with a cap, refused if it holds a secret.
ScreenedLabel = Annotated[Label, _Screened]
RequiredScreenedLabel = Annotated[RequiredLabel, _Screened]
# Free text stored with its secrets redacted (app.api.screened)
RedactedNote = Annotated[
    str, Field(max_length=1000, pattern=NO_NUL), AfterValidator(redact_free_text)
]

# ------------------------------------------------------------------------ answers

# Times are answered as the server wrote them (`datetime.isoformat()`, RFC 3339 with an
# offset); typed as text so validating an answer never rewrites one.
Timestamp = Annotated[str, Field(json_schema_extra={"format": "date-time"})]
Uuid = Annotated[str, Field(json_schema_extra={"format": "uuid"})]
# Caller data kept as given: a fact's value, slots, policy maps.
JsonValue = Any
JsonObject = dict[str, Any]
# A number echoed from stored JSON: an integer stays one (0, not 0.0).
Number = float | int


class Out(BaseModel):
    """A response body: every field named, no other allowed."""

    model_config = ConfigDict(extra="forbid")


class Stored(Out):
    """A part of an answer read back from stored JSON (a recall trace, a job's decisions):
    a row written by another version may carry a key this one does not know, or lack one
    it added; that must not turn a read into a 500. Unknown keys are dropped."""

    model_config = ConfigDict(extra="ignore")


class ErrorDetail(Out):
    code: str = Field(description="stable, e.g. not_found, invalid_request, rate_limited")
    message: str
    details: JsonObject


class ErrorEnvelope(Out):
    """`{error: {code, message, details}}`: the body of every 4xx and 5xx."""

    error: ErrorDetail


T = TypeVar("T")


class Page(Out, Generic[T]):
    """One page of a list (docs/api.md#lists-and-pagination): `next_cursor` is null on the last
    page."""

    items: list[T]
    next_cursor: str | None


class Deleted(Out):
    id: Uuid
    status: Literal["deleted"]


class Rejected(Out):
    id: Uuid
    status: Literal["rejected"]


class Queued(Out):
    """A job accepted: poll `GET /v1/jobs/{job_id}`."""

    job_id: Uuid


class FeedbackCounts(Out):
    useful: int
    not_useful: int


# --------------------------------------------------------------- error statuses

_ERRORS = {
    400: "malformed request",
    401: "unauthorized, token_expired",
    403: "forbidden",
    404: "not_found",
    409: "conflict, idempotency_conflict",
    413: "payload_too_large",
    422: "invalid_request, secret_in_identifier",
    429: "rate_limited",
    500: "internal",
    503: "unavailable",
}

Responses = dict[int | str, dict[str, Any]]


def errors(*statuses: int) -> Responses:
    """The error envelope declared on `statuses`."""
    return {
        status: {"model": ErrorEnvelope, "description": f"error: {_ERRORS[status]}"}
        for status in statuses
    }


# Any request may be refused by the input guard and the body limit (413, 422) or meet an
# internal error (500).
ANY_ROUTE = errors(413, 422, 500)
# A route behind a key: no or a bad key (401), a role or scope it lacks (403), its rate
# (429), PostgreSQL or Redis away (503).
KEYED = errors(401, 403, 429, 503)
# A path naming something (a user, fact, session, job...): 404 when it is not there or
# this key may not see it (and for a path no route matches).
NAMED = errors(404)
# A write: a request body FastAPI cannot read (400), a conflict with the state or an
# Idempotency-Key used for another body (409).
WRITE = errors(400, 409)
# A route that queues extraction: refused while the queue is full (503 overloaded, with
# Retry-After), besides an outage (503 unavailable).
QUEUES: Responses = {
    503: {
        "model": ErrorEnvelope,
        "description": "error: unavailable, overloaded (the extraction queue is full: retry "
        "after Retry-After seconds; nothing was written)",
    }
}
