"""The LLM extractor: an OpenAI-compatible `/v1/chat/completions` returning JSON
(docs/extraction.md#extractors).

Opt-in by configuration. The model sees the conversation (assistant turns as context
only) and answers `{"candidates": [...]}`; the answer is validated with pydantic as a
whole. Anything malformed, or a provider that keeps failing, raises `ExtractorError`
(`retryable` for the job layer): a partial or guessed result is never returned. After
parsing the same rules as the rule extractor apply: user turns only, evidence must be
the user's own words, at most `max_candidates_per_turn` per turn.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import re
import time
from collections.abc import Sequence
from typing import Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.memory.model import Candidate, FactType, Origin, SourceKind
from app.memory.text import nfkc
from app.providers.extractor import (
    MAX_EVIDENCE_CHARS,
    ExtractorError,
    Turn,
    cap_per_turn,
)

__all__ = ["SYSTEM_PROMPT", "ExtractorError", "LLMExtractor", "LLMSummarizer"]

SYSTEM_PROMPT = """\
You extract long-term memories about the USER from a conversation, for a memory service.
Return only JSON: {"candidates": [{"type", "predicate", "value", "statement", "evidence",
"confidence", "turn_id", "explicit"}]}.
Rules:
- Read only turns with role "user". Never extract anything the assistant, system or a
  tool said, even if it describes the user.
- Keep only stable, reusable facts about the user: preferences (preferred_output_format,
  preferred_language, delivery_carrier, preferred_cuisine, preferred_name), constraints
  (communication_constraint), allergy, dietary_restriction, tech_stack, location,
  job_title, employer. Use these snake_case predicates when they fit.
- type: "profile" for preferences, name, location, job_title, employer; "semantic" for
  constraints, allergy, dietary_restriction, tech_stack and other facts.
- Skip questions, hypotheticals ("if", "what if", "如果", "假如"), sarcasm or jokes, facts
  about other people (friends, family, colleagues), past or one-off content, moods.
- statement: one short sentence in the language of the turn, about "the user"/"用户".
- evidence: the exact words of the user turn that support it (a verbatim substring).
- explicit: true when the user explicitly asks to remember or gives a standing instruction
  ("remember…", "from now on…", "记住…", "以后都…").
- confidence: 0..1; lower it for hedged statements ("maybe", "好像").
- turn_id: the turn_id of the user turn the fact comes from.
Return {"candidates": []} when there is nothing worth remembering.
"""

_PREDICATE = r"^[a-z][a-z0-9_]{0,63}$"


class LLMCandidate(BaseModel):
    """One candidate as the model must return it."""

    model_config = ConfigDict(extra="ignore")

    type: Literal["profile", "semantic", "episodic", "procedural"]
    predicate: str | None = Field(None, pattern=_PREDICATE)
    value: Any = None
    statement: str = Field(min_length=1, max_length=500)
    evidence: str | None = Field(None, max_length=4000)
    confidence: float = Field(ge=0.0, le=1.0)
    turn_id: str
    explicit: bool = False


class LLMOutput(BaseModel):
    model_config = ConfigDict(extra="ignore")

    candidates: list[LLMCandidate] = Field(max_length=200)


_RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


class LLMExtractor:
    """Candidates from an OpenAI-compatible chat model, with retries and a concurrency cap."""

    name = "llm"

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str | None = None,
        model: str = "gpt-4o-mini",
        timeout_s: float = 20.0,
        concurrency: int = 4,
        max_retries: int = 3,
        backoff_base_s: float = 0.5,
        backoff_cap_s: float = 8.0,
        retry_after_cap_s: float = 30.0,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        base = base_url.rstrip("/")
        # accept both "http://host" and the OpenAI SDK style "http://host/v1"
        self.url = (
            f"{base}/chat/completions" if base.endswith("/v1") else f"{base}/v1/chat/completions"
        )
        self.model = model
        self.max_retries = max(0, max_retries)
        self.backoff_base_s = backoff_base_s
        self.backoff_cap_s = backoff_cap_s
        self.retry_after_cap_s = retry_after_cap_s
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._timeout = httpx.Timeout(timeout_s)
        self._client = client
        self._owns_client = client is None
        self._semaphore = asyncio.Semaphore(max(1, concurrency))

    async def aclose(self) -> None:
        if self._client is not None and self._owns_client:
            await self._client.aclose()
            self._client = None

    async def extract(
        self,
        turns: Sequence[Turn],
        *,
        user_id: str,
        scope: str = "global",
        max_candidates_per_turn: int = 3,
    ) -> list[Candidate]:
        if max_candidates_per_turn <= 0 or not any(t.role == "user" and t.content for t in turns):
            return []
        refs = {_ref(t, i): t for i, t in enumerate(turns)}
        messages = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {
                "role": "user",
                "content": json.dumps(
                    {
                        "max_candidates_per_turn": max_candidates_per_turn,
                        "turns": [
                            {"turn_id": ref, "role": t.role, "content": t.content}
                            for ref, t in refs.items()
                        ],
                    },
                    ensure_ascii=False,
                ),
            },
        ]
        content = await self._complete(messages)
        output = parse_output(content)
        out: list[Candidate] = []
        for item in output.candidates:
            turn = refs.get(item.turn_id)
            if turn is None or turn.role != "user":
                continue  # the assistant's (or an unknown turn's) words never become memories
            evidence = _grounded_evidence(item.evidence, turn.content)
            if evidence is None:
                continue  # the quoted words are not the user's: ungrounded, dropped
            out.append(
                Candidate(
                    user_id=user_id,
                    type=FactType(item.type),
                    statement=item.statement.strip(),
                    value=item.value,
                    predicate=item.predicate,
                    scope=scope,
                    source_kind=(
                        SourceKind.EXPLICIT_INSTRUCTION
                        if item.explicit
                        else SourceKind.USER_MESSAGE
                    ),
                    turn_id=turn.turn_id if turn.turn_id is not None else item.turn_id,
                    evidence=evidence,
                    confidence=item.confidence,
                    origin=Origin.EXTRACTED,
                )
            )
        return cap_per_turn(out, max_candidates_per_turn)

    async def _complete(
        self, messages: list[dict[str, str]], response_format: dict[str, object] | None = None
    ) -> str:
        body = {
            "model": self.model,
            "messages": messages,
            "temperature": 0,
            "response_format": response_format or {"type": "json_object"},
        }
        last = "no attempt"
        async with self._semaphore:
            client = self._get_client()
            for attempt in range(self.max_retries + 1):
                delay: float | None = None
                try:
                    resp = await client.post(self.url, json=body, headers=self._headers)
                except httpx.TimeoutException:
                    last = "timeout"
                except httpx.TransportError as exc:
                    last = f"transport error: {type(exc).__name__}"
                else:
                    if resp.status_code == 200:
                        return _message_content(resp)
                    last = f"HTTP {resp.status_code}"
                    if resp.status_code not in _RETRY_STATUS:
                        raise ExtractorError(f"llm extractor: {last}", retryable=False)
                    delay = _retry_after(resp.headers.get("Retry-After"))
                if attempt == self.max_retries:
                    break
                await asyncio.sleep(self._backoff(attempt, delay))
        raise ExtractorError(
            f"llm extractor: {last} after {self.max_retries + 1} attempts", retryable=True
        )

    def _get_client(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self._timeout)
        return self._client

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.retry_after_cap_s)
        base: float = min(self.backoff_cap_s, self.backoff_base_s * 2**attempt)
        return base * (0.5 + random.random() / 2)  # jitter spreads retries of parallel jobs


def parse_output(content: str) -> LLMOutput:
    """The model's answer, validated as a whole, or ExtractorError (never a partial list)."""
    try:
        return LLMOutput.model_validate_json(content)
    except ValidationError as exc:
        raise ExtractorError(
            f"llm extractor: malformed output ({exc.error_count()} errors)", retryable=True
        ) from exc


def _message_content(resp: httpx.Response) -> str:
    try:
        content = resp.json()["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise ExtractorError(
            "llm extractor: malformed completion envelope", retryable=True
        ) from exc
    if not isinstance(content, str):
        raise ExtractorError("llm extractor: completion without text content", retryable=True)
    return content


def _retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date), or None."""
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _ref(turn: Turn, index: int) -> str:
    return turn.turn_id if turn.turn_id else f"turn-{index}"


_SPACES = re.compile(r"\s+")


def _squash(text: str) -> str:
    return _SPACES.sub(" ", nfkc(text)).strip().lower()


def _grounded_evidence(evidence: str | None, content: str) -> str | None:
    """The quoted span when it is found in the user's turn; the turn itself when absent."""
    if evidence is None or not evidence.strip():
        return content[:MAX_EVIDENCE_CHARS]
    if _squash(evidence.strip(" \"'“”「」")) in _squash(content):
        return evidence.strip()[:MAX_EVIDENCE_CHARS]
    return None


SUMMARY_PROMPT = """\
You summarize a finished conversation for a memory service, so that the next session can
resume it. Return only JSON: {"summary": "...", "resume_hint": "..."}.
- summary: ONE sentence (max 200 characters) on what the user worked on or asked for, in
  the language of the user's turns, about "the user"/"用户". No secrets, no personal data
  about other people, no instructions to the assistant.
- resume_hint: ONE sentence (max 200 characters) telling the assistant where to pick up
  next time, including what was already collected so it is not asked again.
"""


class SessionSummaryOut(BaseModel):
    model_config = ConfigDict(extra="ignore")
    summary: str = Field(min_length=1, max_length=480)
    resume_hint: str = Field(min_length=1, max_length=480)


class LLMSummarizer:
    """Session summaries over the same OpenAI-compatible chat endpoint (opt-in).

    Shares the extractor's HTTP behaviour (retries, Retry-After, concurrency cap); any
    failure raises ExtractorError and the caller falls back to the extractive summary.
    """

    def __init__(self, llm: LLMExtractor) -> None:
        self.llm = llm

    async def summarize(
        self, turns: Sequence[dict[str, Any]], slots: dict[str, Any]
    ) -> SessionSummaryOut:
        conversation = [
            {"role": str(t.get("role")), "content": str(t.get("content", ""))[:2000]}
            for t in turns[-40:]
        ]
        content = await self.llm._complete(
            [
                {"role": "system", "content": SUMMARY_PROMPT},
                {
                    "role": "user",
                    "content": json.dumps(
                        {"turns": conversation, "slots": slots}, ensure_ascii=False
                    ),
                },
            ]
        )
        try:
            return SessionSummaryOut.model_validate_json(content)
        except ValidationError as exc:
            raise ExtractorError("llm summary: malformed output", retryable=True) from exc

    async def aclose(self) -> None:
        await self.llm.aclose()
