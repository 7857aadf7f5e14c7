"""The "observe" job: conversation turns → extractor → write gate (docs/extraction.md#extractors).

The payload was redacted by the API before it was stored. Extraction (possibly a slow
LLM call) runs outside any transaction; every candidate then goes through the one gate
(`writer.submit_many`: `submit_extracted` per candidate, the ones written directly
set-based, `writer.write_many`) inside the transaction that marks the job done, so a
retried job never counts a turn twice or writes a fact twice. Jobs that finish
extracting together are written together (`ObserveBatcher`): one embedding call and one
transaction for the batch, each job still marked done with exactly its own writes.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from types import SimpleNamespace
from typing import Any

import asyncpg

from app import clock, writer
from app.config import Settings
from app.context import AppContext
from app.faults import is_outage
from app.memory.model import Candidate, KeyRights, Role, Sensitivity, SourceKind
from app.memory.policy import Policy
from app.providers import durable
from app.providers.extractor import Extractor, Turn, assign_turn_ids, extractor_from_settings
from app.queue import OBSERVE
from app.store import candidates as cand_store
from app.store import jobs as jobs_store
from app.store.db import tenant_tx
from app.writer import (
    Embedded,
    StoredVector,
    WriteOutcome,
    embed_candidate,
    guard_user,
    record_interaction,
    submit_many,
    writes_directly,
)
from workers.jobs import JobAlreadyDone, JobResult, JobRun

KIND = OBSERVE
BATCH_MAX_JOBS = 32  # jobs written in one transaction at most
log = logging.getLogger("memgate.observe")


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


def _loop() -> asyncio.AbstractEventLoop:
    return asyncio.get_running_loop()


@dataclass
class Extracted:
    """One observe job, extracted and waiting for its writes."""

    run: JobRun
    user_id: str
    at: datetime
    turns: list[Turn]
    rights: KeyRights
    policy: Policy
    candidates: list[Candidate]
    outcome: JobResult
    done: asyncio.Future[None] = field(default_factory=lambda: _loop().create_future())


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

    policy = app.policies.cached(run.tenant_id)
    if policy is None:
        async with tenant_tx(app.pool, run.tenant_id) as conn:
            policy = await app.policies.get(conn, run.tenant_id)
    candidates = []
    if policy.extract.mode != "off":
        # outside any transaction; jobs held at once extract concurrently (the LLM
        # extractor's calls under its own semaphore)
        candidates = await durable.extract(
            extractor_for(app.settings),
            turns,  # assistant turns are context for the LLM; both read user turns only
            app.embedder,
            policy,
            user_id=user_id,
            scope=scope,
        )
    for c in candidates:
        c.trace_id = payload.get("trace_id")
        c.valid_from = at
        if source_kind and source_kind != SourceKind.USER_MESSAGE.value:
            # The agent says these turns are e.g. a document or external content: that
            # caps their authority, even when the text says "remember".
            c.source_kind = SourceKind(source_kind)
    job = Extracted(
        run,
        user_id,
        at,
        turns,
        rights_of(payload),
        policy,
        candidates,
        JobResult(payload=_without_turns(payload, turns)),
    )
    try:
        await _batcher(app).finish(job)
    except BatchFailed:
        # something in the batch failed: this job alone, in its own transaction, so only
        # a job that fails by itself fails (and is retried as usual)
        async with run.finishing(job.outcome) as conn:
            await _apply(conn, job, [None] * len(job.candidates))
    return job.outcome


class BatchFailed(Exception):
    """The batch this job was in rolled back; the job runs again alone."""


class ObserveBatcher:
    """Observe jobs of one tenant that finish extracting while a batch is being written
    wait and are written together (docs/extraction.md#observations): one embedding call
    for all their candidates, one transaction that locks their rows, gates every
    candidate in job order and marks them all done. A job already finished by another
    run is left out (JobAlreadyDone), so a batch retried after a crash commits each job
    once; if anything fails, the batch rolls back and each job is written alone."""

    def __init__(self) -> None:
        self._waiting: dict[uuid.UUID, list[Extracted]] = {}
        self._runner: asyncio.Task[None] | None = None

    async def finish(self, job: Extracted) -> None:
        # a run that stopped waiting (its timeout) leaves no unretrieved exception behind
        job.done.add_done_callback(lambda f: f.cancelled() or f.exception())
        self._waiting.setdefault(job.run.tenant_id, []).append(job)
        if self._runner is None or self._runner.done():
            self._runner = asyncio.get_running_loop().create_task(self._run())
        await asyncio.shield(job.done)

    async def _run(self) -> None:
        while self._waiting:
            tenant_id = next(iter(self._waiting))
            waiting = self._waiting[tenant_id]
            batch = waiting[:BATCH_MAX_JOBS]
            del waiting[: len(batch)]
            if not waiting:
                del self._waiting[tenant_id]
            try:
                finished = await _write_batch(tenant_id, batch)
            except Exception as exc:
                if len(batch) > 1 or not is_outage(exc):
                    log.warning(
                        "a batch of %d observe jobs rolled back (%s): each runs alone",
                        len(batch),
                        type(exc).__name__,
                    )
                for job in batch:
                    _settle(job, BatchFailed())
                continue
            for job in batch:
                if job.run.id in finished:
                    job.run.completed = True
                    _settle(job, None)
                else:
                    _settle(job, JobAlreadyDone(str(job.run.id)))


def _settle(job: Extracted, exc: BaseException | None) -> None:
    if job.done.done():  # the job's run gave up waiting (its timeout)
        return
    if exc is None:
        job.done.set_result(None)
    else:
        job.done.set_exception(exc)


_batchers: dict[tuple[int, int], ObserveBatcher] = {}


def _batcher(app: AppContext) -> ObserveBatcher:
    """One batcher per worker context and event loop."""
    key = (id(app), id(asyncio.get_running_loop()))
    found = _batchers.get(key)
    if found is None:
        found = _batchers[key] = ObserveBatcher()
    return found


async def _write_batch(tenant_id: uuid.UUID, batch: list[Extracted]) -> set[uuid.UUID]:
    """Write a batch in one transaction; the ids of the jobs it finished."""
    app = batch[0].run.app

    # every candidate embedded at once, before the transaction (a slow embedder holds no
    # lock, and the embedder batches them instead of one call per pooled candidate inside
    # it): a pooled one said again in the same words reuses its pending candidate's stored
    # vector (one lookup for the batch), as submit_extracted would
    pooled = [c for job in batch for c in job.candidates if not writes_directly(c, job.policy)]
    stored: dict[int, StoredVector | None] = {}
    if pooled:
        async with tenant_tx(app.pool, tenant_id) as conn:
            found = await cand_store.vectors_by_key(conn, tenant_id, pooled)
        stored = {id(c): v for c, v in zip(pooled, found, strict=True)}
    embedded = await asyncio.gather(
        *(
            embed_candidate(app, c, job.policy, stored.get(id(c)))
            for job in batch
            for c in job.candidates
        )
    )
    async with tenant_tx(app.pool, tenant_id) as conn:
        states = await jobs_store.lock_states(conn, tenant_id, [job.run.id for job in batch])
        live = [j for j in batch if states.get(j.run.id) not in (None, "done", "failed")]
        mine: dict[uuid.UUID, list[Embedded | None]] = {}
        i = 0
        for job in batch:
            mine[job.run.id] = list(embedded[i : i + len(job.candidates)])
            i += len(job.candidates)
        # every live job's candidates in job order, set-based (app.writer.submit_many)
        outcomes = await submit_many(
            app, conn, tenant_id, [x for j in live for x in _items(j, mine[j.run.id])]
        )
        at = 0
        interacted: dict[str, list[datetime]] = {}
        for job in live:
            if _record(job, outcomes[at : at + len(job.candidates)]):
                interacted.setdefault(job.user_id, []).append(job.at)
            at += len(job.candidates)
            job.outcome.result["batch"] = len(live)
        # the users' last interactions, once per user: the fence as of the earliest job
        # (a forget-me after it refuses the batch, as that job's own fence would), the
        # latest time (the interaction only moves forward)
        for user_id, times in sorted(interacted.items()):
            await guard_user(conn, tenant_id, user_id, min(times))  # also with no candidate
            await record_interaction(conn, tenant_id, user_id, max(times))
        await jobs_store.mark_done_many(
            conn,
            tenant_id,
            clock.now(),
            [(j.run.id, j.outcome.decisions, j.outcome.result, j.outcome.payload) for j in live],
        )
    return {j.run.id for j in live}


def _items(job: Extracted, embedded: list[Embedded | None]) -> list[writer.Extracted]:
    return [
        writer.Extracted(job.rights, c, job.policy, job.at, c.turn_id or f"{job.run.id}:?", pre)
        for c, pre in zip(job.candidates, embedded, strict=True)
    ]


async def _apply(conn: asyncpg.Connection, job: Extracted, embedded: list[Embedded | None]) -> None:
    """One job's writes (inside the transaction that marks it done): every candidate
    through the one gate (`writer.submit_many`), and the user's last interaction."""
    run = job.run
    outcomes = await submit_many(run.app, conn, run.tenant_id, _items(job, embedded))
    if _record(job, outcomes):
        await guard_user(conn, run.tenant_id, job.user_id, job.at)  # also with no candidate
        await record_interaction(conn, run.tenant_id, job.user_id, job.at)


def _record(job: Extracted, outcomes: list[WriteOutcome]) -> bool:
    """A job's decisions and result; whether its turns are the user's interaction
    (a user turn, as the user's own message)."""
    payload, app = job.run.payload, job.run.app
    job.outcome.decisions = []
    for c, result in zip(job.candidates, outcomes, strict=True):
        decision: dict[str, Any] = {"turn_id": c.turn_id, "decision": result.decision.value}
        if result.reason is not None:
            decision["reason"] = result.reason.value
        if result.detail:  # which detector, field, score: never the text
            decision["detail"] = result.detail
        if result.fact_id is not None:
            decision["fact_id"] = str(result.fact_id)
        if result.candidate_id is not None:
            decision["candidate_id"] = str(result.candidate_id)
        job.outcome.decisions.append(decision)
    job.outcome.result = {
        "turns": len(job.turns),
        "user_turns": sum(1 for t in job.turns if t.role == "user"),
        "candidates": len(job.candidates),
        "extractor": extractor_for(app.settings).name,
        "mode": job.policy.extract.mode,
    }
    source_kind = payload.get("source_kind")
    return any(t.role == "user" for t in job.turns) and source_kind in (None, "user_message")


def _without_turns(payload: dict[str, Any], turns: list[Turn]) -> dict[str, Any]:
    """What the job row keeps once done: the turns' ids and roles, not their words.

    Conversation text has no use after extraction, and keeping it would outlive a later
    deletion of the facts drawn from it (docs/lifecycle.md#deletion).
    """
    kept = {k: v for k, v in payload.items() if k != "messages"}
    kept["messages"] = [{"role": t.role, "turn_id": t.turn_id} for t in turns]
    return kept
