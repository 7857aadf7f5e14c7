"""Closing a session: summary + resume hint → an episodic fact through the write gate, and
the user's state (last session, hint, last interaction). Shared by `POST …/close` and the
idle sweep, so both close exactly the same way and at most once.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from app.context import AppContext
from app.memory.model import Candidate, Decision, FactType, KeyRights, Origin, Reason, SourceKind
from app.metrics import worker_incr
from app.providers.extractor import ExtractorError
from app.session.store import Session, SessionStore
from app.session.summary import SessionSummary, summarize
from app.store import audit
from app.store import users as users_store
from app.store.db import tenant_tx
from app.writer import WriteOutcome, guard_user, record_interaction, write

log = logging.getLogger("memgate.sessions")

CLAIM_TTL_S = 120
CLAIM_WAIT_S = 5.0  # an API close waits this long for a concurrent closer to finish
# The gist quotes the user; when the gate refuses it for one of these, the outline
# (turn count and slots, no quotes) is tried instead.
_RETRY_AS_OUTLINE = {
    Reason.NOT_REUSABLE,
    Reason.SENSITIVE_NEEDS_CONSENT,
    Reason.THIRD_PARTY_PII,
}
STORED = (Decision.WRITTEN, Decision.MERGED, Decision.SUPERSEDED)


class SessionBusy(Exception):
    """Another process holds the close claim of this session."""


@dataclass
class CloseResult:
    session: Session
    already_closed: bool
    decision: str | None = None
    reason: str | None = None

    def json(self) -> dict[str, Any]:
        s = self.session
        return {
            "id": s.id,
            "user_id": s.user_id,
            "closed": True,
            "closed_at": s.closed_at.isoformat() if s.closed_at else None,
            "summary": s.summary,
            "resume_hint": s.hint,
            "fact_id": s.fact_id,
            "decision": self.decision,
            "reason": self.reason,
            "already_closed": self.already_closed,
        }


def summary_candidate(s: Session, text: str) -> Candidate:
    return Candidate(
        user_id=s.user_id,
        type=FactType.EPISODIC,
        statement=text,
        scope=s.scope,
        source_kind=SourceKind.SYSTEM,
        evidence=f"session:{s.id}",
        trace_id=f"session:{s.id}",
        valid_from=s.last_turn_at or s.created_at,
        origin=Origin.EXPLICIT,
    )


async def close_session(
    ctx: AppContext,
    tenant_id: uuid.UUID,
    sid: str,
    rights: KeyRights,
    now: datetime,
    *,
    trigger: str,
    actor_role: str | None = None,
    wait: bool = True,
) -> CloseResult | None:
    """Close `sid` once. None when it does not exist in this tenant; `SessionBusy` when
    another closer holds it (after waiting up to CLAIM_WAIT_S if `wait`)."""
    store = SessionStore(ctx.sessions)
    token = await store.claim(tenant_id, sid, CLAIM_TTL_S)
    waited = 0.0
    while token is None and wait and waited < CLAIM_WAIT_S:
        await asyncio.sleep(0.05)
        waited += 0.05
        token = await store.claim(tenant_id, sid, CLAIM_TTL_S)
    if token is None:
        raise SessionBusy(sid)
    try:
        s = await store.get(tenant_id, sid)
        if s is None:
            return None
        if s.closed:
            return CloseResult(s, already_closed=True)
        result = await _summarize_and_store(ctx, tenant_id, s, rights, now, trigger, actor_role)
        await store.mark_closed(
            tenant_id,
            s.user_id,
            sid,
            now,
            summary=s.summary,
            hint=s.hint,
            fact_id=s.fact_id,
            retain_s=result[1],
        )
        s.closed, s.closed_at = True, now
    finally:
        await store.release(tenant_id, sid, token)
    await worker_incr(ctx.redis, "memgate_sessions_closed_total", trigger=trigger)
    return CloseResult(s, already_closed=False, decision=result[0][0], reason=result[0][1])


async def _llm_summary(ctx: AppContext, s: Session, extractive: SessionSummary) -> SessionSummary:
    """The configured LLM's summary and hint (turns are already redacted in Redis); on any
    failure the extractive one. Either way the gate still decides what is stored."""
    assert ctx.summarizer is not None
    try:
        async with asyncio.timeout(ctx.settings.llm_timeout_s):
            out = await ctx.summarizer.summarize(s.turns, dict(s.slots))
    except (ExtractorError, TimeoutError) as exc:
        # the type only: an extractor error may quote the model's reply, i.e. user text
        log.warning("llm session summary failed (%s); using the extractive one", type(exc).__name__)
        return extractive
    return SessionSummary(out.summary, out.resume_hint, extractive.lang, extractive.user_turns)


async def _summarize_and_store(
    ctx: AppContext,
    tenant_id: uuid.UUID,
    s: Session,
    rights: KeyRights,
    now: datetime,
    trigger: str,
    actor_role: str | None,
) -> tuple[tuple[str | None, str | None], int]:
    """Write the summary fact and the user's state in one tenant transaction.

    Returns ((decision, reason), retain seconds). A retried close after a crash between
    this commit and the Redis update writes the same statement again: the gate merges it.
    """
    summary: SessionSummary | None = summarize(s.turns, s.slots)
    if summary is not None and ctx.summarizer is not None:
        summary = await _llm_summary(ctx, s, summary)
    outcome: WriteOutcome | None = None
    async with tenant_tx(ctx.pool, tenant_id) as conn:
        # A session opened before its user was forgotten belongs to what was forgotten,
        # whenever it closes: fenced by its opening time, not by now.
        await guard_user(conn, tenant_id, s.user_id, min(now, s.created_at))
        policy = await ctx.policies.get(conn, tenant_id)
        if summary is not None:
            outcome = await write(
                ctx, conn, tenant_id, rights, summary_candidate(s, summary.summary), policy, now
            )
            if outcome.decision is Decision.REJECTED and outcome.reason in _RETRY_AS_OUTLINE:
                outline = summarize(s.turns, s.slots, lang=summary.lang, outline_only=True)
                if outline is not None:
                    summary = outline
                    outcome = await write(
                        ctx,
                        conn,
                        tenant_id,
                        rights,
                        summary_candidate(s, outline.summary),
                        policy,
                        now,
                    )
        kept = outcome is not None and outcome.decision in STORED
        if kept and summary is not None and outcome is not None:
            s.summary, s.hint = summary.summary, summary.hint
            s.fact_id = str(outcome.fact_id) if outcome.fact_id else None
        # Last interaction = the latest user turn (docs/tiers.md#last-interaction), not the time of
        # closing: an idle sweep must not make a stale user look fresh.
        await users_store.upsert_state(
            conn,
            tenant_id,
            s.user_id,
            now,
            # the hint is shown only to recalls that may read this scope
            session=(s.id, s.hint, s.scope),
        )
        if s.last_user_turn_at is not None:
            await record_interaction(conn, tenant_id, s.user_id, s.last_user_turn_at)
        decision = outcome.decision.value if outcome else None
        reason = outcome.reason.value if outcome and outcome.reason else None
        await audit.record(
            conn,
            tenant_id,
            "session_close",
            actor=rights.key_id,
            actor_role=actor_role or rights.role.value,
            user_id=s.user_id,
            decision=decision,
            reason=reason,
            fact_id=uuid.UUID(s.fact_id) if s.fact_id else None,
            source_kind=SourceKind.SYSTEM.value,
            trace_id=f"session:{s.id}",
            policy_version=policy.version,
            scope=s.scope,
            detail={
                "session_id": s.id,
                "trigger": trigger,
                "turns": s.turn_count,
                "slots": len(s.slots),
                "hint": s.hint is not None,
            },
            at=now,
        )
    return (decision, reason), int(policy.session.retain_hours * 3600)
