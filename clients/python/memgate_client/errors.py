"""One exception class per error `code` the service answers (docs/api.md#errors).

Every API error is a `MemgateError` carrying the HTTP status, the stable `code`, the
message, `details` and the request's trace id (`X-Trace-Id`); catch the subclass for the
code you handle. A connection that fails after every retry is `MemgateConnectionError`.
"""

from __future__ import annotations

import json
from typing import Any

import httpx


class MemgateClientError(Exception):
    """Anything this client raises."""


class MemgateConnectionError(MemgateClientError):
    """The request never got an answer (connection refused, reset, timed out), after retries."""


class MemgateError(MemgateClientError):
    """An error answer: `{"error": {"code", "message", "details"}}`."""

    code: str = ""  # the class's code; an instance holds the one answered

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        details: dict[str, Any] | None = None,
        trace_id: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.details = details or {}
        self.trace_id = trace_id
        self.retry_after = retry_after


class UnauthorizedError(MemgateError):
    code = "unauthorized"


class TokenExpiredError(MemgateError):
    code = "token_expired"


class ForbiddenError(MemgateError):
    code = "forbidden"


class NotFoundError(MemgateError):
    code = "not_found"


class MethodNotAllowedError(MemgateError):
    code = "method_not_allowed"


class ConflictError(MemgateError):
    code = "conflict"


class IdempotencyConflictError(MemgateError):
    """The same Idempotency-Key with another body, or a retry of a call whose answer held a
    secret (a key, a token): `details.first` is the non-secret part of the first answer."""

    code = "idempotency_conflict"


class PayloadTooLargeError(MemgateError):
    code = "payload_too_large"


class InvalidRequestError(MemgateError):
    code = "invalid_request"


class SecretInIdentifierError(MemgateError):
    code = "secret_in_identifier"


class RateLimitedError(MemgateError):
    code = "rate_limited"


class InternalError(MemgateError):
    code = "internal"


class UnavailableError(MemgateError):
    code = "unavailable"


class OverloadedError(MemgateError):
    code = "overloaded"


# The /me web page's codes: a browser meets them, an API client only if it posts the page's forms.
class CsrfFailedError(MemgateError):
    code = "csrf_failed"


class LoginLinkInvalidError(MemgateError):
    code = "login_link_invalid"


class ConfirmationMismatchError(MemgateError):
    code = "confirmation_mismatch"


ERRORS: dict[str, type[MemgateError]] = {
    cls.code: cls
    for cls in (
        UnauthorizedError,
        TokenExpiredError,
        ForbiddenError,
        NotFoundError,
        MethodNotAllowedError,
        ConflictError,
        IdempotencyConflictError,
        PayloadTooLargeError,
        InvalidRequestError,
        SecretInIdentifierError,
        RateLimitedError,
        InternalError,
        UnavailableError,
        OverloadedError,
        CsrfFailedError,
        LoginLinkInvalidError,
        ConfirmationMismatchError,
    )
}


def retry_after(response: httpx.Response) -> float | None:
    """`Retry-After` in seconds (the service sends whole seconds), None when absent or a date."""
    raw = response.headers.get("Retry-After")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        return None


def error_from(response: httpx.Response) -> MemgateError:
    """The exception for an error answer; a body that is not the envelope (a proxy's page)
    gives the base class with code `unknown`."""
    code, message = "unknown", response.reason_phrase or "error"
    details: dict[str, Any] = {}
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("code"), str):
        code = error["code"]
        message = str(error.get("message", message))
        details = error["details"] if isinstance(error.get("details"), dict) else {}
    cls = ERRORS.get(code, MemgateError)
    return cls(
        response.status_code,
        code,
        message,
        details,
        trace_id=response.headers.get("X-Trace-Id"),
        retry_after=retry_after(response),
    )
