"""The outermost ASGI middleware: refuse bad input before anything reads it, and answer
every unhandled error with a 500 envelope without dropping the connection.

Before the app (idempotency, auth, routes) sees a request, its path, query string and
headers are checked (valid UTF-8, no U+0000, no `.`/`..` segment, header caps) and a
JSON body is read whole (size cap) and parsed strictly (app.api.validation). A refused
request is answered 413 `payload_too_large` or 422 `invalid_request` and nothing runs.

Starlette's ServerErrorMiddleware answers 500 but then re-raises, and uvicorn closes the
connection of any request whose app raised: a keep-alive client then loses its next
request. Here an error is logged (its type and route, never the request's text) and
answered, and the server keeps the connection.
"""

from __future__ import annotations

import logging
import re
from urllib.parse import parse_qsl, unquote_to_bytes

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.asgi import send_json
from app.api.middleware import body_limit
from app.api.validation import InputError, parse_json, text_problem
from app.errors import error_body
from app.logs import describe_exception

log = logging.getLogger("memgate.guard")

MAX_QUERY_BYTES = 8192
MAX_HEADER_VALUE = 8192
IDEMPOTENCY_KEY = re.compile(r"[\x21-\x7e]{1,255}")
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class _Disconnected(Exception):
    """The client went away before its request body was complete."""


class _Refused(Exception):
    def __init__(self, status: int, code: str, message: str, loc: list[str]) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.loc = status, code, message, loc


def _invalid(message: str, loc: list[str]) -> _Refused:
    return _Refused(422, "invalid_request", message, loc)


def check_target(scope: Scope) -> None:
    """Path and query string: valid UTF-8, no NUL, no dot segments."""
    raw_path = scope.get("raw_path") or scope["path"].encode()
    try:
        path = unquote_to_bytes(raw_path.decode("latin-1")).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _invalid("the path is not valid UTF-8", ["path"]) from exc
    problem = text_problem(path)
    if problem:
        raise _invalid(f"path: {problem}", ["path"])
    if any(seg in (".", "..") for seg in path.split("/")):
        raise _invalid("a path segment may not be '.' or '..'", ["path"])
    query: bytes = scope.get("query_string", b"")
    if len(query) > MAX_QUERY_BYTES:
        raise _invalid(f"query string over {MAX_QUERY_BYTES} bytes", ["query"])
    try:
        pairs = parse_qsl(query.decode("latin-1"), keep_blank_values=True, errors="strict")
    except UnicodeDecodeError as exc:
        raise _invalid("the query string is not valid UTF-8", ["query"]) from exc
    for name, value in pairs:
        problem = text_problem(name) or text_problem(value)
        if problem:
            raise _invalid(f"query: {problem}", ["query", name[:64]])


def check_headers(scope: Scope) -> None:
    for raw_name, raw_value in scope.get("headers", []):
        name = raw_name.decode("latin-1").lower()
        if len(raw_value) > MAX_HEADER_VALUE:
            raise _invalid(f"header over {MAX_HEADER_VALUE} bytes", ["header", name])
        if b"\x00" in raw_value:
            raise _invalid("a header must not contain U+0000", ["header", name])
        if name == "idempotency-key" and not IDEMPOTENCY_KEY.fullmatch(raw_value.decode("latin-1")):
            raise _invalid(
                "Idempotency-Key: 1-255 visible ASCII characters", ["header", "idempotency-key"]
            )


def _is_json(scope: Scope) -> bool:
    """A body read as one JSON document; NDJSON (an import's lines) is its route's to read."""
    for key, value in scope.get("headers", []):
        if key == b"content-type":
            kind = value.lower()
            return b"json" in kind and b"ndjson" not in kind and b"jsonl" not in kind
    return True  # FastAPI reads a body without a content type as JSON


class InputGuard:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state = {"started": False, "complete": False}

        async def tracked_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                state["started"] = True
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                state["complete"] = True
            await send(message)

        try:
            check_target(scope)
            check_headers(scope)
            if scope["method"] in _BODY_METHODS and _is_json(scope):
                receive = await self._checked_body(scope, receive)
        except _Refused as refused:
            details = {"fields": [{"loc": refused.loc, "msg": refused.message}]}
            await send_json(
                send, refused.status, error_body(refused.code, refused.message, details), []
            )
            return
        except _Disconnected:
            return  # the client left before its body was complete: nothing to answer
        try:
            await self.app(scope, receive, tracked_send)
        except Exception as exc:
            route = getattr(scope.get("route"), "path", None) or "unmatched"
            # where and what kind, never the message or the body: both may quote user text
            log.error(
                "unhandled error in %s %s: %s", scope["method"], route, describe_exception(exc)
            )
            if not state["started"]:
                await send_json(send, 500, error_body("internal", "internal error"), [])
            elif not state["complete"]:
                raise  # a half-sent answer: only closing the connection ends it

    async def _checked_body(self, scope: Scope, receive: Receive) -> Receive:
        limit = body_limit(scope["path"])
        for key, value in scope.get("headers", []):
            if key == b"content-length" and value.isdigit() and int(value) > limit:
                raise _Refused(413, "payload_too_large", f"body over {limit} bytes", ["body"])
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise _Disconnected  # a body that never fully arrived is never run
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise _Refused(413, "payload_too_large", f"body over {limit} bytes", ["body"])
            chunks.append(chunk)
            more = bool(message.get("more_body", False))
        body = b"".join(chunks)
        if body.strip():
            try:
                parse_json(body)
            except InputError as exc:
                raise _invalid(exc.message, exc.where) from exc
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # after the body: wait for the disconnect, as usual

        return replay
