"""The local models' machinery: each runs in its own child process (encoder_process.py)
by default, or on one compute thread per process and kind (`isolate=False`)."""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from app.providers.embedders.base import CachingEmbedder, EmbedderError
from app.providers.encoder_process import EncoderExited, EncoderProcess, EncoderUnavailable

log = logging.getLogger("memgate.embedder")

# In-thread mode (isolate=False): one model and one compute thread per process and kind:
# the model is large, and a single thread keeps a 2-core box responsive (BLAS is
# single-threaded too, see blas.py).
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


def load_once(kind: str, loader: Any) -> Any:
    model = _models.get(kind)
    if model is None:
        with _local_lock:
            model = _models.get(kind)
            if model is None:
                model = loader()
                _models[kind] = model
    return model


_processes: dict[str, EncoderProcess] = {}


class LocalModelEmbedder(CachingEmbedder):
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
                try:
                    return await self.process.encode(list(texts), is_query=is_query)
                except EncoderExited:
                    # The child died under these texts (not because of them: a bad batch
                    # gets an error answer and the child lives on). Once more, on a new
                    # child: else every write in flight is stored without a vector and
                    # every query recalls blind (a LoCoMo run under load fell to 0.338).
                    log.warning("%s encoder process died; sending the batch again", self.kind)
                    return await self.process.encode(list(texts), is_query=is_query)
            except EncoderUnavailable as exc:
                raise EmbedderError(str(exc)) from exc
        from app.providers import embedders  # its local_encoder: the package imports us

        loop = asyncio.get_running_loop()
        arr = await loop.run_in_executor(
            _executor(self.kind), embedders.local_encoder(self.kind), list(texts), is_query
        )
        out: list[list[float]] = arr.tolist()
        return out

    async def aclose(self) -> None:
        if self.isolate and self.kind in _processes:
            await _processes[self.kind].aclose()
