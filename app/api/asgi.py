"""What the pure-ASGI middlewares share: read a request header, answer with JSON."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.types import Scope, Send


def header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return str(value.decode("latin-1"))
    return None


async def send_json(send: Send, status: int, body: Any, extra: list[tuple[bytes, bytes]]) -> None:
    data = body.encode() if isinstance(body, str) else orjson.dumps(body)
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers + extra})
    await send({"type": "http.response.body", "body": data})
