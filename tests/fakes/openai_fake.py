"""A real HTTP fake of an OpenAI-compatible API on loopback, for provider tests (offline).

    from tests.fakes.openai_fake import OpenAIFake, Reply

    with OpenAIFake(dim=64) as fake:
        fake.base_url                      # "http://127.0.0.1:<port>/v1"
        fake.chat_script.append(Reply.chat({"candidates": []}))   # JSON content, ok
        fake.chat_script.append(Reply.chat("not json {"))          # malformed content
        fake.chat_script.append(Reply.error(429, retry_after=0.1)) # rate limited
        fake.chat_script.append(Reply.error(500))
        fake.chat_script.append(Reply.chat({...}, delay=5.0))      # slower than a client timeout
        fake.embeddings_script.append(Reply.error(503))            # same for /v1/embeddings
        ...
        fake.requests                      # [Recorded(method, path, headers, json)], in order
        fake.chat_requests                 # only POST /v1/chat/completions

Endpoints: `POST /v1/chat/completions` and `POST /v1/embeddings`. A script is a queue:
each request pops the next `Reply`; an empty chat script answers `default_chat` (an empty
candidate list), an empty embeddings script answers deterministic vectors: unit-length,
`dim` floats derived from SHA-256 of each input text (`OpenAIFake.vector(text, dim)`),
for a string or a batched list `input`, with `model` echoed. With `api_key` set, requests
without `Authorization: Bearer <api_key>` get 401. Paths without the `/v1` prefix work too.
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted HTTP answer."""

    status: int = 200
    body: Any = None  # a JSON-able object, or str/bytes sent as is
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to sleep before answering

    @staticmethod
    def chat(content: Any, *, delay: float = 0.0, model: str = "fake-model") -> Reply:
        """A chat completion whose message content is `content` (dicts are JSON-encoded)."""
        text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
        return Reply(
            body={
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            },
            delay=delay,
        )

    @staticmethod
    def error(status: int, *, retry_after: float | None = None, delay: float = 0.0) -> Reply:
        headers = {} if retry_after is None else {"Retry-After": f"{retry_after:g}"}
        body = {"error": {"message": f"fake error {status}", "type": "fake", "code": status}}
        return Reply(status=status, body=body, headers=headers, delay=delay)

    @staticmethod
    def raw(body: str | bytes, *, status: int = 200) -> Reply:
        """A body that is not even JSON at the HTTP level."""
        return Reply(status=status, body=body)


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    json: Any


class OpenAIFake:
    """The fake server; start/stop it with `with` (or `start()` / `stop()`)."""

    def __init__(self, *, dim: int = 64, api_key: str | None = None) -> None:
        self.dim = dim
        self.api_key = api_key
        self.chat_script: deque[Reply] = deque()
        self.embeddings_script: deque[Reply] = deque()
        self.default_chat: Reply = Reply.chat({"candidates": []})
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle --------------------------------------------------------------------
    def start(self) -> OpenAIFake:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> OpenAIFake:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "not started"
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def chat_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    @property
    def embeddings_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.path.endswith("/embeddings")]

    # -- behaviour --------------------------------------------------------------------
    @staticmethod
    def vector(text: str, dim: int = 64) -> list[float]:
        """The deterministic unit vector the fake answers for `text`."""
        raw = b""
        counter = 0
        while len(raw) < 4 * dim:
            raw += hashlib.sha256(f"{counter}\x00{text}".encode()).digest()
            counter += 1
        ints = struct.unpack(f"<{dim}i", raw[: 4 * dim])
        vec = [i / 2**31 for i in ints]
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        return [v / norm for v in vec]

    def _next(self, path: str, payload: Any) -> Reply:
        with self._lock:
            if path.endswith("/chat/completions"):
                return self.chat_script.popleft() if self.chat_script else self.default_chat
            if path.endswith("/embeddings"):
                if self.embeddings_script:
                    return self.embeddings_script.popleft()
                return self._embeddings(payload)
        return Reply.error(404)

    def _embeddings(self, payload: Any) -> Reply:
        if not isinstance(payload, dict) or "input" not in payload:
            return Reply.error(400)
        inputs = payload["input"]
        texts = [inputs] if isinstance(inputs, str) else list(inputs)
        dim = int(payload.get("dimensions") or self.dim)
        return Reply(
            body={
                "object": "list",
                "model": payload.get("model", "fake-embed"),
                "data": [
                    {"object": "embedding", "index": i, "embedding": self.vector(str(t), dim)}
                    for i, t in enumerate(texts)
                ],
                "usage": {"prompt_tokens": len(texts), "total_tokens": len(texts)},
            }
        )


def _handler_for(fake: OpenAIFake) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet test output
            return

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                payload: Any = json.loads(raw) if raw else None
            except ValueError:
                payload = raw.decode("utf-8", "replace")
            with fake._lock:
                fake.requests.append(
                    Recorded(
                        "POST", self.path, {k.lower(): v for k, v in self.headers.items()}, payload
                    )
                )
            if (
                fake.api_key is not None
                and self.headers.get("Authorization") != f"Bearer {fake.api_key}"
            ):
                reply = Reply.error(401)
            else:
                reply = fake._next(self.path, payload)
            if reply.delay:
                time.sleep(reply.delay)
            if isinstance(reply.body, bytes):
                data = reply.body
            elif isinstance(reply.body, str):
                data = reply.body.encode()
            else:
                data = json.dumps(reply.body, ensure_ascii=False).encode()
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout tests)

    return Handler
