"""memgate's REST API as the MCP server sees it: one request with the caller's key, retried
on a transport failure with the same Idempotency-Key, and an error envelope turned into a
`MemgateError` that carries its stable `code`."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any
from urllib.parse import quote

import httpx

_RETRIES = 2  # after the first attempt, on a connection or read failure only
_BACKOFF_S = (0.2, 0.5)


class MemgateError(Exception):
    """An answer of the API that is not a success, as `{"error": {code, message, status,
    details}}` (docs/api.md#errors): the message never quotes what the caller sent."""

    def __init__(self, code: str, message: str, status: int, details: Any = None) -> None:
        self.code = code
        self.message = message
        self.status = status
        self.details = details
        super().__init__(self.as_json())

    def envelope(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message, "status": self.status}
        if self.details:
            error["details"] = self.details
        return {"error": error}

    def as_json(self) -> str:
        return json.dumps(self.envelope(), ensure_ascii=False, sort_keys=True)


def segment(value: str) -> str:
    """A path segment, every reserved character and `.` percent-encoded, so a user id such
    as `..` reaches the API's own id validation (422) instead of being resolved away."""
    return quote(value, safe="").replace(".", "%2E")


class Rest:
    """One HTTP client for the MCP server's lifetime; each call names its own key."""

    def __init__(self, base_url: str, *, timeout: float = 30.0) -> None:
        self._http = httpx.AsyncClient(base_url=base_url.rstrip("/"), timeout=timeout)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def call(
        self,
        method: str,
        path: str,
        key: str,
        *,
        json_body: Any = None,
        params: dict[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> Any:
        """The answer's JSON, or `MemgateError`. A write names an Idempotency-Key (a new one
        unless the caller gave one): a retry after a lost answer then replays the first
        answer and writes nothing twice (docs/api.md#idempotency)."""
        headers = {"Authorization": f"Bearer {key}"}
        if method != "GET":
            headers["Idempotency-Key"] = idempotency_key or f"mcp-{uuid.uuid4()}"
        query = {k: v for k, v in (params or {}).items() if v is not None}
        for attempt in range(_RETRIES + 1):
            try:
                response = await self._http.request(
                    method, path, headers=headers, json=json_body, params=query
                )
                break
            except httpx.TransportError:
                if attempt == _RETRIES:
                    raise MemgateError(
                        "unavailable", "memgate is unreachable; try again", 503
                    ) from None
                await asyncio.sleep(_BACKOFF_S[attempt])
        return _answer(response)


def _answer(response: httpx.Response) -> Any:
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.is_success:
        return body
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        raise MemgateError(
            "upstream_error", "memgate answered without an error body", response.status_code
        )
    raise MemgateError(
        str(error.get("code") or "upstream_error"),
        str(error.get("message") or ""),
        response.status_code,
        error.get("details"),
    )
