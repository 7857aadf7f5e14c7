"""Named errors and their one mapping to HTTP status + stable `code` (docs/api.md#errors,
docs/api.md#precise-semantics).

Every 4xx/5xx body has the shape {"error": {"code", "message", "details"}}.
"""

from __future__ import annotations

import json
import logging
import math
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.logs import describe_exception

log = logging.getLogger("memgate.errors")


class MemgateError(Exception):
    status = 500
    code = "internal"

    def __init__(self, message: str = "", details: dict[str, Any] | None = None) -> None:
        super().__init__(message or self.code)
        self.message = message or self.code.replace("_", " ")
        self.details = details or {}


class Unauthorized(MemgateError):
    status, code = 401, "unauthorized"


class TokenExpired(MemgateError):
    status, code = 401, "token_expired"


class Forbidden(MemgateError):
    status, code = 403, "forbidden"


class NotFound(MemgateError):
    status, code = 404, "not_found"


class InvalidRequest(MemgateError):
    status, code = 422, "invalid_request"


class ConfirmationMismatch(InvalidRequest):
    """The /me page's forget-me form without its typed confirmation word."""

    code = "confirmation_mismatch"


class SecretInIdentifier(MemgateError):
    """An id, header or object key holds a secret: refused so it never rests anywhere."""

    status, code = 422, "secret_in_identifier"


class CsrfFailed(MemgateError):
    """A form post of the /me page without its session's CSRF token, or from another site."""

    status, code = 403, "csrf_failed"


class LoginLinkInvalid(MemgateError):
    """An unknown, used or expired /me sign-in link: a link works once."""

    status, code = 400, "login_link_invalid"


class Conflict(MemgateError):
    status, code = 409, "conflict"


class IdempotencyConflict(MemgateError):
    status, code = 409, "idempotency_conflict"


class PayloadTooLarge(MemgateError):
    status, code = 413, "payload_too_large"


class RateLimited(MemgateError):
    status, code = 429, "rate_limited"


class Unavailable(MemgateError):
    status, code = 503, "unavailable"


class Overloaded(MemgateError):
    """More work queued than the workers can do: refused, nothing written; retry later."""

    status, code = 503, "overloaded"


_STATUS_CODES = {
    400: "invalid_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "invalid_request",
    422: "invalid_request",
    429: "rate_limited",
    503: "unavailable",
}


def error_body(code: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "details": details or {}}}


def error_response(exc: MemgateError) -> JSONResponse:
    headers = None
    retry = exc.details.get("retry_after_s")
    if isinstance(retry, int | float):
        headers = {"Retry-After": str(max(1, math.ceil(retry)))}
    return JSONResponse(
        error_body(exc.code, exc.message, exc.details), status_code=exc.status, headers=headers
    )


def _validation_fields(exc: RequestValidationError) -> list[dict[str, Any]]:
    fields = []
    for err in exc.errors():
        loc = [str(p) for p in err.get("loc", ())]
        fields.append({"loc": loc, "msg": err.get("msg", ""), "type": err.get("type", "")})
    return fields


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(MemgateError)
    async def _memgate(_: Request, exc: MemgateError) -> JSONResponse:
        return error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        fields = _validation_fields(exc)
        malformed = any(f["type"] == "json_invalid" for f in fields)
        message = "malformed JSON body" if malformed else "invalid request"
        code = "invalid_request"
        if any(f["type"] == SecretInIdentifier.code for f in fields):
            code, message = SecretInIdentifier.code, "an identifier holds a secret"
        return JSONResponse(
            error_body(code, message, {"fields": json.loads(json.dumps(fields))}),
            status_code=422,
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _STATUS_CODES.get(exc.status_code, "error")
        return JSONResponse(
            error_body(code, str(exc.detail)), status_code=exc.status_code, headers=exc.headers
        )

    @app.exception_handler(Exception)
    async def _internal(request: Request, exc: Exception) -> JSONResponse:
        # Where and what kind, never the message or the body: both may quote user text.
        route = getattr(request.scope.get("route"), "path", "unmatched")
        log.error("unhandled error in %s %s: %s", request.method, route, describe_exception(exc))
        return JSONResponse(error_body("internal", "internal error"), status_code=500)
