"""Bulk writes and imports (docs/api.md#bulk-import): a batch of one user's facts through
the gate in order, and an import job of many users' facts (generic JSONL or mem0's
export) run by a worker with its progress and report on the job row.

A batch is one transaction. Its statements are embedded in one call before it begins;
inside, the users' forget-me fences and then every subject the batch writes are locked
in one order (two batches that share subjects wait for each other, never deadlock), and
the items are decided as ordinary gated writes one after another would be, set-based
(`app.writer.write_many`: one read of the tombstones and conflict pools, the rules in
memory in item order, multi-row writes): item 2 sees item 1's fact, an item's refusal is
that item's answer only. Either every decision commits or none does, so
a failed batch can be sent again as it was (with its Idempotency-Key, a replay of a
batch that committed writes nothing twice).

An import's content rests in the job row until the job ends, so it is screened at intake:
an item the gate's rules refuse (a secret, an ID, a card number, an injection...) is
audited and listed in the report by line, id and reason, and only what passed is kept.
The worker then writes (or, in a dry run, screens) the items in chunks, one transaction
each, the chunk's report and the progress committed with its writes: a retried job
resumes after the last committed chunk and writes nothing twice.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from app import clock
from app.auth import Principal
from app.context import AppContext
from app.memory import gate
from app.memory.imports import candidate_json, candidate_of, counts, with_policy_confidence
from app.memory.model import Candidate, Decision, GateResult, KeyRights, Role, Sensitivity
from app.memory.policy import Policy
from app.queue import IMPORT
from app.services.policies import tenant_policy
from app.store import facts as facts_store
from app.store import jobs as jobs_store
from app.store.db import tenant_tx
from app.writer import (
    SYSTEM_RIGHTS,
    WriteOutcome,
    audit_refusal,
    embed_and_screen,
    embed_candidates,
    guard_user,
    preview,
    subject_of,
    write_many,
)

log = logging.getLogger("memgate.importer")

BATCH_MAX_ITEMS = 500  # POST /v1/users/{u}/facts:batch
IMPORT_MAX_ITEMS = 100_000  # POST /v1/admin/import, per call
IMPORT_CHUNK = 250  # items per transaction of an import job
PASS = "pass"  # a dry run's item the screening lets through


@dataclass
class Screened:
    """A dry run's answer for one item: what the gate's screening decides."""

    decision: str
    reason: str | None = None
    detail: dict[str, Any] | None = None

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {"decision": self.decision}
        if self.reason is not None:
            out["reason"] = self.reason
        if self.detail:
            out["detail"] = self.detail
        return out


def _screened(result: GateResult | None) -> Screened:
    if result is None:
        return Screened(PASS)
    return Screened(
        result.decision.value,
        result.reason.value if result.reason else None,
        dict(result.detail) or None,
    )


async def _fence_and_lock(
    conn: Any, tenant_id: uuid.UUID, cs: Sequence[Candidate], now: datetime
) -> None:
    """What each write takes first, for the whole batch and in one order: the users'
    forget-me fences, then the subjects."""
    for user_id in sorted({c.user_id for c in cs}):
        await guard_user(conn, tenant_id, user_id, now)
    await facts_store.lock_subjects(conn, tenant_id, [subject_of(c) for c in cs])


async def write_batch(
    ctx: AppContext, who: Principal, cs: Sequence[Candidate], now: datetime
) -> list[WriteOutcome]:
    """Every candidate through the gate and the conflict rules, in order, in one
    transaction: one decision per candidate."""
    policy = await tenant_policy(ctx, who.tenant_id)
    # before the locks: embedded together, each screened as its vectors come back
    embedded, ahead = await embed_and_screen(ctx, who.tenant_id, who.rights, cs, policy)
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        await _fence_and_lock(conn, who.tenant_id, cs, now)
        nows = [_nth(now, n) for n in range(len(cs))]
        return await write_many(
            ctx, conn, who.tenant_id, who.rights, cs, policy, nows, embedded, ahead
        )


def _nth(now: datetime, n: int) -> datetime:
    """The time of a batch's n-th write: in order, as if each came after the one before
    (without it, conflicting values of one batch would tie, rule 4, instead of the later
    superseding the earlier, rule 3)."""
    return now + timedelta(microseconds=n)


async def screen_batch(
    ctx: AppContext, who: Principal, cs: Sequence[Candidate], now: datetime
) -> list[Screened]:
    """A dry run: what the gate's screening decides for each candidate (rules, semantic
    classes, the user's tombstones), writing nothing."""
    policy = await tenant_policy(ctx, who.tenant_id)
    _, screened = await embed_and_screen(ctx, who.tenant_id, who.rights, cs, policy)
    return [_screened(result) for result in screened.results]


# ------------------------------------------------------------------------------ imports


@dataclass
class ImportItem:
    """One item of an import: where it is in the upload (line, 1-based), the id it had in
    the store it comes from (reported, kept in provenance), its candidate."""

    line: int
    id: str | None
    candidate: Candidate


def _entry(item_line: int, item_id: str | None, user_id: str) -> dict[str, Any]:
    return {"line": item_line, "id": item_id, "user_id": user_id}


def rights_json(rights: KeyRights) -> dict[str, Any]:
    return {
        "key_id": str(rights.key_id) if rights.key_id else None,
        "role": rights.role.value,
        "scopes": list(rights.allowed_scopes) if rights.allowed_scopes is not None else None,
        "max_sensitivity": rights.max_sensitivity.value,
    }


async def queue_import(
    ctx: AppContext,
    tenant_id: uuid.UUID,
    rights: KeyRights,
    items: Sequence[ImportItem],
    fmt: str,
    dry_run: bool,
    now: datetime,
) -> uuid.UUID:
    """Screen every item by the gate's rules, then store the import job: the refusals as
    the first entries of its report (never their text), the rest to be written. Its id;
    handing it to arq is the caller's, after the answer (app.queue.enqueue)."""
    policy = await tenant_policy(ctx, tenant_id)
    refused: list[tuple[ImportItem, GateResult]] = []
    kept: list[ImportItem] = []
    for item in items:
        with_policy_confidence(item.candidate, policy.imports.confidence)
        result = gate.screen(item.candidate, rights, policy, ())
        if result is not None and result.decision is Decision.REJECTED:
            refused.append((item, result))
        else:
            kept.append(item)
    # One user's items together, in their order (conflicts are per user): a chunk of the
    # job then locks one user's fence and subjects.
    first_seen: dict[str, int] = {}
    for n, item in enumerate(kept):
        first_seen.setdefault(item.candidate.user_id, n)
    kept.sort(key=lambda i: (first_seen[i.candidate.user_id], i.line))
    report = [
        {
            **_entry(item.line, item.id, item.candidate.user_id),
            "decision": Decision.REJECTED.value,
            "reason": result.reason.value if result.reason else None,
            "detail": dict(result.detail),
        }
        for item, result in refused
    ]
    job_id = uuid.uuid4()
    payload = {
        "format": fmt,
        "dry_run": dry_run,
        "total": len(items),
        "rights": rights_json(rights),
        "items": [
            {"line": i.line, "id": i.id, "fact": candidate_json(_traced(i.candidate, job_id))}
            for i in kept
        ],
    }
    progress = _progress(fmt, dry_run, len(items), [r["decision"] for r in report])
    async with tenant_tx(ctx.pool, tenant_id) as conn:
        if not dry_run:
            for item, result in refused:
                await audit_refusal(conn, tenant_id, rights, item.candidate, result, policy, now)
        await jobs_store.insert(conn, tenant_id, IMPORT, payload, now, job_id=job_id)
        await jobs_store.append_decisions(conn, tenant_id, job_id, report, progress, now)
    return job_id


def _traced(c: Candidate, job_id: uuid.UUID) -> Candidate:
    """Every fact of an import names its job as its trace (docs/api.md#bulk-import)."""
    if c.trace_id is None:
        c.trace_id = f"import:{job_id}"
    return c


def _progress(fmt: str, dry_run: bool, total: int, decisions: Sequence[str]) -> dict[str, Any]:
    """The job's result while it runs: `done` of `total` items decided, counts by decision."""
    return {
        "format": fmt,
        "dry_run": dry_run,
        "total": total,
        "done": len(decisions),
        "counts": counts(decisions, (PASS,) if dry_run else ()),
    }


def _report_entry(base: dict[str, Any], out: WriteOutcome | Screened) -> dict[str, Any]:
    entry = {**base, "decision": out.decision if isinstance(out, Screened) else out.decision.value}
    if isinstance(out, Screened):
        entry.update({k: v for k, v in out.body().items() if k != "decision"})
        return entry
    if out.reason is not None:
        entry["reason"] = out.reason.value
    if out.detail:
        entry["detail"] = out.detail
    if out.fact_id is not None:
        entry["fact_id"] = str(out.fact_id)
    if out.candidate_id is not None:
        entry["candidate_id"] = str(out.candidate_id)
    return entry


class ImportSliceEnded(Exception):
    """An import ran for its time slice: the job runs again after its last committed
    chunk (the progress made resets its tries, `jobs_store.append_decisions`)."""


async def run_import(
    ctx: AppContext,
    tenant_id: uuid.UUID,
    job_id: uuid.UUID,
    payload: dict[str, Any],
    deadline: float | None = None,
) -> bool:
    """Write (or screen, in a dry run) the job's items in chunks after the last committed
    one, each chunk's report and the progress committed with its writes; at the monotonic
    `deadline` (after at least one chunk) `ImportSliceEnded`. True when every item is
    decided; False when another run finished the job meanwhile."""
    rights = rights_of(payload.get("rights") or {})
    dry_run = bool(payload.get("dry_run"))
    items = payload.get("items") or []
    # the items refused at intake are decided already: `done` counts them too
    at_intake = int(payload.get("total", len(items))) - len(items)
    policy = await tenant_policy(ctx, tenant_id)
    chunks = 0
    while True:
        if chunks and deadline is not None and time.monotonic() >= deadline:
            raise ImportSliceEnded(f"{chunks} chunks this run")
        async with tenant_tx(ctx.pool, tenant_id) as conn:
            row = await jobs_store.get(conn, tenant_id, job_id, lock=True)
            if row is None or row["state"] in ("done", "failed"):
                return False
            progress = dict(row["result"] or {})
            start = max(0, int(progress.get("done", at_intake)) - at_intake)
            chunk = items[start : start + IMPORT_CHUNK]
            if not chunk:
                return True
            entries = await _decide_chunk(ctx, conn, tenant_id, rights, policy, chunk, dry_run)
            decided = dict(progress.get("counts") or {})
            for e in entries:
                decided[e["decision"]] = decided.get(e["decision"], 0) + 1
            progress.update(done=at_intake + start + len(chunk), counts=decided)
            await jobs_store.append_decisions(
                conn, tenant_id, job_id, entries, progress, clock.now()
            )
        chunks += 1


async def _decide_chunk(
    ctx: AppContext,
    conn: Any,
    tenant_id: uuid.UUID,
    rights: KeyRights,
    policy: Policy,
    chunk: Sequence[dict[str, Any]],
    dry_run: bool,
) -> list[dict[str, Any]]:
    """One chunk's items through the gate (and, unless a dry run, written): their report."""
    cs = [candidate_of(i["fact"]) for i in chunk]
    now = clock.now()
    embedded = await embed_candidates(ctx, cs, policy)
    outs: list[WriteOutcome | Screened] = []
    if dry_run:
        for c, e in zip(cs, embedded, strict=True):
            outs.append(_screened(await preview(ctx, conn, tenant_id, rights, c, policy, e)))
    else:
        await _fence_and_lock(conn, tenant_id, cs, now)
        nows = [_nth(now, n) for n in range(len(cs))]
        outs.extend(await write_many(ctx, conn, tenant_id, rights, cs, policy, nows, embedded))
    return [
        _report_entry(_entry(i["line"], i.get("id"), c.user_id), out)
        for i, c, out in zip(chunk, cs, outs, strict=True)
    ]


def final_report(
    row: Any, payload: dict[str, Any]
) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
    """What a finished import keeps (decisions, result, payload): the report sorted by
    line, the counts marked complete, the payload without its items."""
    decisions = sorted(row["decisions"] or [], key=lambda d: int(d.get("line", 0)))
    result = {**(row["result"] or {}), "complete": True}
    return decisions, result, {k: v for k, v in payload.items() if k != "items"}


async def import_now(
    ctx: AppContext,
    tenant_id: uuid.UUID,
    items: Sequence[ImportItem],
    fmt: str,
    dry_run: bool,
) -> tuple[uuid.UUID, dict[str, Any]]:
    """The whole import in this process (the CLI): the same job a worker would run,
    queued, run and marked done here. Its id and the finished job's report
    `{result, decisions}`. A worker that picks the job up meanwhile finds it done, or
    waits on each chunk's lock and decides nothing twice."""
    job_id = await queue_import(ctx, tenant_id, SYSTEM_RIGHTS, items, fmt, dry_run, clock.now())
    async with tenant_tx(ctx.pool, tenant_id) as conn:
        row = await jobs_store.get(conn, tenant_id, job_id)
        assert row is not None
        payload = dict(row["payload"])
    await run_import(ctx, tenant_id, job_id, payload)
    async with tenant_tx(ctx.pool, tenant_id) as conn:
        row = await jobs_store.get(conn, tenant_id, job_id, lock=True)
        assert row is not None
        decisions, result, kept = final_report(row, payload)
        if row["state"] not in ("done", "failed"):
            await jobs_store.mark_done(
                conn, tenant_id, job_id, clock.now(), decisions, result, kept
            )
    return job_id, {"result": result, "decisions": decisions}


def rights_of(raw: dict[str, Any]) -> KeyRights:
    """The importing key's rights, as `rights_json` kept them: items are gated as that key."""
    scopes = raw.get("scopes")
    return KeyRights(
        key_id=uuid.UUID(raw["key_id"]) if raw.get("key_id") else None,
        role=Role(raw.get("role", "admin")),
        allowed_scopes=tuple(scopes) if scopes is not None else None,
        max_sensitivity=Sensitivity(raw.get("max_sensitivity", "personal")),
    )
