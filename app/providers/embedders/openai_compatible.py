"""openai: any OpenAI-compatible `/v1/embeddings` endpoint, opt-in by configuration."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np

from app.providers.embedders.base import (
    DEFAULT_QUERY_CACHE_SIZE,
    CachingEmbedder,
    EmbeddingProviderError,
    normalize_rows,
)

_RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


class OpenAIEmbedder(CachingEmbedder):
    """Any OpenAI-compatible `POST {base_url}/v1/embeddings`. Retries 429/5xx/timeouts with
    exponential backoff (honouring Retry-After); other failures raise at once."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        dim: int | None = None,
        send_dimensions: bool = False,
        batch_size: int = 128,
        timeout: float = 30.0,
        max_retries: int = 4,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        query_cache_size: int = DEFAULT_QUERY_CACHE_SIZE,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        super().__init__(batch_size=batch_size, query_cache_size=query_cache_size)
        if send_dimensions and not dim:
            raise ValueError("send_dimensions needs dim")
        base = base_url.rstrip("/")
        # accept both "http://host" and the OpenAI SDK style "http://host/v1"
        self.url = f"{base}/embeddings" if base.endswith("/v1") else f"{base}/v1/embeddings"
        self.remote_model = model
        # the dimension is part of the name when we ask for a reduced one
        self.model = f"openai:{model}" + (f"@{dim}" if send_dimensions else "")
        self.dim = dim or 0
        self.send_dimensions = send_dimensions
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self._timeout = httpx.Timeout(timeout, connect=min(timeout, 10.0))
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._own_client = client is None
        self._client = client
        self._client_loop: asyncio.AbstractEventLoop | None = None

    def _http(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        # an httpx pool belongs to one event loop; tests and CLIs may run several
        if self._client is None or (self._own_client and self._client_loop is not loop):
            self._client = httpx.AsyncClient(timeout=self._timeout)
            self._client_loop = loop
        return self._client

    async def aclose(self) -> None:
        if self._own_client and self._client is not None:
            await self._client.aclose()
            self._client = None

    async def warmup(self) -> None:
        if not self.dim:
            await self._embed(["warmup"], is_query=False)

    async def _embed(self, texts: Sequence[str], *, is_query: bool) -> list[list[float]]:
        if not texts:
            return []
        payload: dict[str, Any] = {
            "model": self.remote_model,
            "input": list(texts),
            "encoding_format": "float",
        }
        if self.send_dimensions:
            payload["dimensions"] = self.dim
        body = await self._post_with_retries(payload)
        return self._parse(body, len(texts))

    async def _post_with_retries(self, payload: dict[str, Any]) -> Any:
        attempts = self.max_retries + 1
        for attempt in range(1, attempts + 1):
            retry_after: float | None = None
            try:
                resp = await self._http().post(
                    self.url, json=payload, headers=self._headers, timeout=self._timeout
                )
            except (httpx.TimeoutException, httpx.TransportError) as exc:
                problem = f"{type(exc).__name__}: {exc}"
                status: int | None = None
            else:
                if resp.status_code == 200:
                    try:
                        return resp.json()
                    except ValueError as exc:
                        raise EmbeddingProviderError(
                            "embedding provider returned invalid JSON",
                            status=200,
                            attempts=attempt,
                        ) from exc
                status = resp.status_code
                problem = f"HTTP {status}: {resp.text[:200]}"
                if status not in _RETRYABLE_STATUS:
                    raise EmbeddingProviderError(
                        f"embedding provider refused the request ({problem})",
                        status=status,
                        attempts=attempt,
                    )
                retry_after = _retry_after_seconds(resp.headers.get("retry-after"))
            if attempt == attempts:
                raise EmbeddingProviderError(
                    f"embedding provider failed after {attempt} attempts ({problem})",
                    status=status,
                    attempts=attempt,
                )
            await asyncio.sleep(self._delay(attempt, retry_after))
        raise AssertionError("unreachable")  # pragma: no cover

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_backoff)
        base: float = min(self.backoff * 2 ** (attempt - 1), self.max_backoff)
        return base * random.uniform(0.5, 1.0)  # jitter: do not retry in lockstep

    def _parse(self, body: Any, expected: int) -> list[list[float]]:
        try:
            items = sorted(body["data"], key=lambda item: int(item["index"]))
            raw = [item["embedding"] for item in items]
        except (KeyError, TypeError, ValueError) as exc:
            raise EmbeddingProviderError(
                "embedding provider returned an unexpected body", status=200
            ) from exc
        if len(raw) != expected:
            raise EmbeddingProviderError(
                f"embedding provider returned {len(raw)} vectors for {expected} inputs",
                status=200,
            )
        try:
            mat = np.asarray(raw, dtype=np.float32)
        except (TypeError, ValueError) as exc:  # ragged or non-numeric
            raise EmbeddingProviderError(
                "embedding provider returned malformed vectors", status=200
            ) from exc
        if mat.ndim != 2 or mat.shape[1] == 0:
            raise EmbeddingProviderError(
                "embedding provider returned malformed vectors", status=200
            )
        if not self.dim:
            self.dim = int(mat.shape[1])  # discovered from the first response
        elif mat.shape[1] != self.dim:
            raise EmbeddingProviderError(
                f"embedding provider returned dimension {mat.shape[1]}, expected {self.dim}",
                status=200,
            )
        return normalize_rows(mat)


def _retry_after_seconds(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # an HTTP date: fall back to our own backoff
