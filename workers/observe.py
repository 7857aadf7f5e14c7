"""The "observe" job: conversation turns → extractor → write gate (docs/extraction.md#extractors).

The payload was redacted by the API before it was stored. Extraction (possibly a slow
LLM call) runs outside any transaction; every candidate then goes through
`writer.submit_extracted` — the one gate — inside the transaction that marks the job
done, so a retried job never counts a turn twice or writes a fact twice.
"""

from __future__ import annotations

import functools
import uuid
from datetime import datetime
from types import SimpleNamespace
from typing import Any

from app.config import Settings
from app.memory.model import KeyRights, Role, Sensitivity, SourceKind
from app.providers.extractor import Extractor, Turn, assign_turn_ids, extractor_from_settings
from app.queue import OBSERVE
from app.store.db import tenant_tx
from app.writer import guard_user, record_interaction, submit_extracted
from workers.jobs import JobResult, JobRun

KIND = OBSERVE


def _settings_key(s: Settings) -> tuple[Any, ...]:
    return (
        s.extractor,
        s.llm_base_url,
        s.llm_api_key,
        s.llm_model,
        s.llm_timeout_s,
        s.llm_concurrency,
    )


@functools.lru_cache(maxsize=4)
def _extractor(key: tuple[Any, ...]) -> Extractor:
    kind, base_url, api_key, model, timeout_s, concurrency = key
    return extractor_from_settings(
        SimpleNamespace(
            extractor=kind,
            llm_base_url=base_url,
            llm_api_key=api_key,
            llm_model=model,
            llm_timeout_s=timeout_s,
            llm_concurrency=concurrency,
        )
    )


def extractor_for(settings: Settings) -> Extractor:
    """One extractor per process and configuration (the LLM one holds an HTTP pool)."""
    return _extractor(_settings_key(settings))


def rights_of(payload: dict[str, Any]) -> KeyRights:
    """The posting key's rights: extraction is gated as that key, not as the system."""
    raw = payload.get("rights") or {}
    scopes = raw.get("scopes")
    return KeyRights(
        key_id=uuid.UUID(raw["key_id"]) if raw.get("key_id") else None,
        role=Role(raw.get("role", "agent")),
        allowed_scopes=tuple(scopes) if scopes is not None else None,
        max_sensitivity=Sensitivity(raw.get("max_sensitivity", "personal")),
    )


def turns_of(payload: dict[str, Any], job_id: uuid.UUID) -> list[Turn]:
    turns = [
        Turn(role=m["role"], content=m.get("content") or "", turn_id=m.get("turn_id"))
        for m in payload.get("messages", [])
    ]
    # Turns without an id get a hash of (job, index): stable across retries
    # (docs/extraction.md#observations).
    return assign_turn_ids(turns, request_key=str(job_id))


async def handle_observe(run: JobRun) -> JobResult:
    app, payload = run.app, run.payload
    user_id = run.user_id or payload["user_id"]
    scope = payload.get("scope") or "global"
    received = payload.get("received_at")
    # Facts take the time the turns were received (docs/conflicts.md#time-and-conflicts: valid_from
    # defaults to the time of receipt), not the time a worker got to them.
    at = datetime.fromisoformat(received) if received else run.now
    turns = turns_of(payload, run.id)
    source_kind = payload.get("source_kind")
    rights = rights_of(payload)

    async with tenant_tx(app.pool, run.tenant_id) as conn:
        policy = await app.policies.get(conn, run.tenant_id)
    candidates = []
    if policy.extract.mode != "off":
        candidates = await extractor_for(app.settings).extract(
            turns,  # assistant turns are context for the LLM; both read user turns only
            user_id=user_id,
            scope=scope,
            max_candidates_per_turn=policy.extract.max_candidates_per_turn,
        )

    outcome = JobResult(payload=_without_turns(payload, turns))
    async with run.finishing(outcome) as conn:
        for c in candidates:
            c.trace_id = payload.get("trace_id")
            c.valid_from = at
            if source_kind and source_kind != SourceKind.USER_MESSAGE.value:
                # The agent says these turns are e.g. a document or external content: that
                # caps their authority, even when the text says "remember".
                c.source_kind = SourceKind(source_kind)
            turn_key = c.turn_id or f"{run.id}:?"
            result = await submit_extracted(
                app, conn, run.tenant_id, rights, c, policy, at, turn_key
            )
            decision: dict[str, Any] = {"turn_id": c.turn_id, "decision": result.decision.value}
            if result.reason is not None:
                decision["reason"] = result.reason.value
            if result.detail:  # which detector, field, score: never the text
                decision["detail"] = result.detail
            if result.fact_id is not None:
                decision["fact_id"] = str(result.fact_id)
            if result.candidate_id is not None:
                decision["candidate_id"] = str(result.candidate_id)
            outcome.decisions.append(decision)
        if any(t.role == "user" for t in turns) and source_kind in (None, "user_message"):
            await guard_user(conn, run.tenant_id, user_id, at)  # also with no candidate
            await record_interaction(conn, run.tenant_id, user_id, at)
        outcome.result = {
            "turns": len(turns),
            "user_turns": sum(1 for t in turns if t.role == "user"),
            "candidates": len(candidates),
            "extractor": extractor_for(app.settings).name,
            "mode": policy.extract.mode,
        }
    return outcome


def _without_turns(payload: dict[str, Any], turns: list[Turn]) -> dict[str, Any]:
    """What the job row keeps once done: the turns' ids and roles, not their words.

    Conversation text has no use after extraction, and keeping it would outlive a later
    deletion of the facts drawn from it (docs/lifecycle.md#deletion).
    """
    kept = {k: v for k, v in payload.items() if k != "messages"}
    kept["messages"] = [{"role": t.role, "turn_id": t.turn_id} for t in turns]
    return kept
