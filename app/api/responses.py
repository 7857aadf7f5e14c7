"""What every route may answer besides its success, in one place: the error envelope
(SPEC §8) with its statuses, declared on every router, and the 405 answer whose `Allow`
lists every method of the path (not only the first route that matched it)."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel
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


# A write through the gate answers by its decision (SPEC §4).
WRITE_OUTCOMES: dict[int | str, dict[str, Any]] = {
    200: {"description": "merged, or rejected by the policy (the body says why)"},
    201: {"description": "written or superseded"},
    202: {"description": "pending: held as a candidate or waiting for the user"},
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
