"""memgate-client: the Python SDK of memgate (sync `Client`, async `AsyncClient`).

from memgate_client import Client

with Client("http://127.0.0.1:8080", "mgk_...") as mg:
    fact = {"type": "semantic", "statement": "...", "source": {"kind": "user_message"}}
    mg.write_fact("u1", fact)
    block = mg.recall_context("u1", "what should I cook?", 200)
"""

from memgate_client import models
from memgate_client._async_client import AsyncClient
from memgate_client._core import RetryPolicy
from memgate_client._sync_client import Client
from memgate_client.errors import (
    ERRORS,
    ConfirmationMismatchError,
    ConflictError,
    CsrfFailedError,
    ForbiddenError,
    IdempotencyConflictError,
    InternalError,
    InvalidRequestError,
    LoginLinkInvalidError,
    MemgateClientError,
    MemgateConnectionError,
    MemgateError,
    MethodNotAllowedError,
    NotFoundError,
    OverloadedError,
    PayloadTooLargeError,
    RateLimitedError,
    SecretInIdentifierError,
    TokenExpiredError,
    UnauthorizedError,
    UnavailableError,
)

__all__ = [
    "ERRORS",
    "AsyncClient",
    "Client",
    "ConfirmationMismatchError",
    "ConflictError",
    "CsrfFailedError",
    "ForbiddenError",
    "IdempotencyConflictError",
    "InternalError",
    "InvalidRequestError",
    "LoginLinkInvalidError",
    "MemgateClientError",
    "MemgateConnectionError",
    "MemgateError",
    "MethodNotAllowedError",
    "NotFoundError",
    "OverloadedError",
    "PayloadTooLargeError",
    "RateLimitedError",
    "RetryPolicy",
    "SecretInIdentifierError",
    "TokenExpiredError",
    "UnauthorizedError",
    "UnavailableError",
    "models",
]
__version__ = "0.1.0"
