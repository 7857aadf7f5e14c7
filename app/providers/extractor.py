"""The extractor interface: conversation turns in, structured candidates out
(docs/extraction.md#extractors).

Two implementations feed the same gate: the offline rule extractor (`rules`) and
an LLM extractor over an OpenAI-compatible chat endpoint (`extract_llm`). Both read user
turns only and return at most `max_candidates_per_turn` candidates per turn, each with
`origin=extracted`, the turn id and the user's own words as evidence.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol

from app.memory.model import Candidate

TurnRole = Literal["user", "assistant", "system", "tool"]

MAX_STATEMENT_CHARS = 500  # docs/api.md#size-limits
MAX_EVIDENCE_CHARS = 500


@dataclass(frozen=True)
class Turn:
    """One message of a conversation as handed to `POST /observations` or a session."""

    role: TurnRole
    content: str
    turn_id: str | None = None


class ExtractorError(Exception):
    """Extraction failed as a whole; nothing was extracted.

    `retryable` tells the job layer whether running the job again may help (rate limits,
    timeouts, 5xx) or not (malformed output, bad configuration).
    """

    def __init__(self, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable


class Extractor(Protocol):
    name: str

    async def extract(
        self,
        turns: Sequence[Turn],
        *,
        user_id: str,
        scope: str = "global",
        max_candidates_per_turn: int = 3,
    ) -> list[Candidate]: ...


def assign_turn_ids(turns: Sequence[Turn], *, request_key: str) -> list[Turn]:
    """Fill absent turn ids with a hash of the request and the message index
    (docs/extraction.md#observations).

    The job layer calls this before extracting, so that "distinct turns" for promotion
    are stable across retries of the same request.
    """
    out: list[Turn] = []
    for index, turn in enumerate(turns):
        if turn.turn_id:
            out.append(turn)
            continue
        digest = hashlib.sha256(f"{request_key}\x00{index}".encode()).hexdigest()[:16]
        out.append(replace(turn, turn_id=f"h:{digest}"))
    return out


def cap_per_turn(candidates: Sequence[Candidate], limit: int) -> list[Candidate]:
    """At most `limit` candidates per turn: the most confident, in their original order."""
    if limit <= 0:
        return []
    by_turn: dict[str | None, list[int]] = {}
    for index, cand in enumerate(candidates):
        by_turn.setdefault(cand.turn_id, []).append(index)
    keep: set[int] = set()
    for indexes in by_turn.values():
        ranked = sorted(indexes, key=lambda i: -(candidates[i].confidence or 0.0))
        keep.update(ranked[:limit])
    return [cand for index, cand in enumerate(candidates) if index in keep]


def build_extractor(
    kind: str = "rules",
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    model: str = "gpt-4o-mini",
    timeout_s: float = 20.0,
    concurrency: int = 4,
    max_retries: int = 3,
) -> Extractor:
    """The configured extractor: "rules" (default, offline) or "llm" (needs `base_url`)."""
    if kind == "rules":
        from app.providers.rules import RuleExtractor

        return RuleExtractor()
    if kind == "llm":
        if not base_url:
            raise ValueError("the llm extractor needs a base_url (MEMGATE_LLM_BASE_URL)")
        from app.providers.extract_llm import LLMExtractor

        return LLMExtractor(
            base_url=base_url,
            api_key=api_key,
            model=model,
            timeout_s=timeout_s,
            concurrency=concurrency,
            max_retries=max_retries,
        )
    raise ValueError(f"unknown extractor {kind!r} (expected 'rules' or 'llm')")


def extractor_from_settings(settings: Any) -> Extractor:
    """`build_extractor` from an `app.config.Settings`-like object (attribute names there)."""
    return build_extractor(
        getattr(settings, "extractor", "rules"),
        base_url=getattr(settings, "llm_base_url", None),
        api_key=getattr(settings, "llm_api_key", None),
        model=getattr(settings, "llm_model", "gpt-4o-mini"),
        timeout_s=getattr(settings, "llm_timeout_s", 20.0),
        concurrency=getattr(settings, "llm_concurrency", 4),
    )
