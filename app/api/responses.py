"""What every route may answer besides its success, in one place: the error envelope
(SPEC §8) with its statuses, declared on every router, and the 405 answer whose `Allow`
lists every method of the path (not only the first route that matched it)."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from app.errors import error_body


class ErrorDetail(BaseModel):
    code: str
    message: str
    details: dict[str, Any]


class ErrorEnvelope(BaseModel):
    """`{error: {code, message, details}}`: the body of every 4xx and 5xx."""

    error: ErrorDetail


_ERRORS = {
    400: "malformed request",
    401: "unauthorized, token_expired",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict, idempotency_conflict",
    413: "payload_too_large",
    422: "invalid_request",
    429: "rate_limited",
    500: "internal",
    503: "unavailable",
}
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorEnvelope, "description": f"error: {codes}"}
    for status, codes in _ERRORS.items()
}


class GateDetail(BaseModel):
    """Why the gate refused or held a write: the detector, the field it read and, for a
    semantic class, its score and the tenant's threshold. Never the text itself."""

    model_config = ConfigDict(extra="allow")
    detector: str | None = Field(None, description="e.g. ignore_instructions, semantic_injection")
    kind: Literal["rule", "semantic"] | None = None
    field: Literal["statement", "predicate", "value", "evidence", "keys", "content"] | None = None
    score: float | None = Field(None, ge=0, le=1)
    threshold: float | None = Field(None, ge=0, le=1)
    semantic: str | None = Field(
        None, description='whether the semantic classes ran: "on", or "off: why"'
    )


class WriteResult(BaseModel):
    """The answer to a gated write (SPEC §4)."""

    decision: Literal["written", "merged", "superseded", "pending", "rejected"]
    reason: str | None = None
    fact: dict[str, Any] | None = None
    superseded: list[str] | None = None
    # the candidate's id; the candidate itself when a confirmation answers
    candidate: str | dict[str, Any] | None = None
    detail: GateDetail | None = Field(None, description="set when rejected or held by the gate")


# A write through the gate answers by its decision (SPEC §4).
WRITE_OUTCOMES: dict[int | str, dict[str, Any]] = {
    200: {"model": WriteResult,
          "description": "merged, or rejected by the policy (the body says why)"},
    201: {"model": WriteResult, "description": "written or superseded"},
    202: {"model": WriteResult,
          "description": "pending: held as a candidate or waiting for the user"},
}


async def method_not_allowed(request: Request, exc: Exception) -> JSONResponse:
    """405 with `Allow` naming every method routed at this path."""
    methods: set[str] = set()
    for route in request.app.router.routes:
        match, _ = route.matches({**request.scope, "method": "__none__"})
        if match is not Match.NONE:
            methods |= set(getattr(route, "methods", None) or ())
    allow = ", ".join(sorted(methods))
    detail = exc.detail if isinstance(exc, StarletteHTTPException) else "method not allowed"
    return JSONResponse(
        error_body("method_not_allowed", str(detail)), status_code=405, headers={"Allow": allow}
    )
