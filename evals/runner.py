"""`make eval`: run the labeled scenarios through the real API and report the figures.

What runs: a private embedded PostgreSQL+pgvector and Redis in a temp dir, the real
FastAPI app in-process (its lifespan, httpx.ASGITransport) and a real arq worker on the
same event loop, so observation jobs go through the outbox, the queue and the extractor
exactly as in production. Every scenario is sent over HTTP; nothing calls the gate
directly. Figures (docs/architecture.md#evaluation):

write path  precision, recall, bad-write escape rate by category, sensitive-write rate,
            conflict-resolution accuracy per docs/conflicts.md#the-rules rule, duplicate rate after
            the consolidation sweep;
read path   precision@k, needed-memory recall@k, stale-use rate, cross-scope / cross-user
            / cross-tenant leakage (must be 0), tier correctness.

Quality figures are reported, not gated: the exit code is non-zero only when leakage is
found or the suite itself errors. A section whose endpoint does not exist yet is
SKIPPED with a line saying so.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import secrets
import shutil
import sys
import tempfile
import time
import traceback
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

from evals.dataset import Suite, load_suite, messages_of, post_body, request_body, validate
from evals.metrics import Counter, fmt, item_matches, mean, ratio, table, value_matches

ROOT = Path(__file__).resolve().parent.parent
REPORTS = ROOT / "reports"
K = 5  # precision@k / recall@k: what an agent would inject for one turn
CONCURRENCY = 8  # independent users in flight; bounded so the 2-core box stays responsive
JOB_TIMEOUT_S = 120.0
TIER_T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)  # pinned clock for the tier scenarios
# The whole run happens "on" this day (test clock offset, API and worker alike): the
# scenarios carry fixed dates (valid_from, and the TTLs that follow from them), so their
# gold answers must not drift with the calendar. The day the gold was last checked.
EVAL_NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)

# Routes each section needs; a missing one skips the section (the API is still growing).
R_FACTS = ("POST", "/v1/users/{user_id}/facts")
R_OBS = ("POST", "/v1/users/{user_id}/observations")
R_JOBS = ("GET", "/v1/jobs/{job_id}")
R_CANDS = ("GET", "/v1/users/{user_id}/candidates")
R_RECALL = ("POST", "/v1/users/{user_id}/recall")

T = TypeVar("T")
R = TypeVar("R")


def _prepare_env(data_dir: Path) -> None:
    """Settings are read at import time by some modules (workers.settings): set first."""
    os.environ["MEMGATE_ENV"] = "test"  # enables the X-Memgate-Now clock pin
    os.environ["MEMGATE_TEST_CLOCK_OFFSET"] = str(
        round((EVAL_NOW - datetime.now(UTC)).total_seconds(), 3)
    )
    os.environ["OMP_NUM_THREADS"] = "1"  # one BLAS thread: the embedder shares 2 cores
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    os.environ.setdefault("MEMGATE_LOG_LEVEL", "WARNING")
    os.environ.setdefault("MEMGATE_SECRET", secrets.token_urlsafe(32))
    # No cron: the eval runs the consolidation sweep itself, at a known point.
    os.environ["MEMGATE_CRON"] = "false"
    os.environ["DATA_DIR"] = str(data_dir)


async def bounded(items: Sequence[T], fn: Callable[[T], Awaitable[R]]) -> list[R]:
    sem = asyncio.Semaphore(CONCURRENCY)

    async def one(item: T) -> R:
        async with sem:
            return await fn(item)

    return list(await asyncio.gather(*(one(i) for i in items)))


class SectionSkipped(Exception):
    pass


class Harness:
    """The HTTP side: keys, requests, and the reads every section shares."""

    def __init__(self, client: Any, app: Any, keys: dict[str, str], routes: set[tuple[str, str]]):
        self.client = client
        self.app = app
        self.keys = keys
        self.routes = routes

    def require(self, *routes: tuple[str, str]) -> None:
        missing = [f"{m} {p}" for m, p in routes if (m, p) not in self.routes]
        if missing:
            raise SectionSkipped("endpoint not available: " + ", ".join(missing))

    async def call(
        self,
        method: str,
        path: str,
        key: str = "agent",
        body: Any = None,
        now: datetime | None = None,
    ) -> Any:
        headers = {"Authorization": f"Bearer {self.keys[key]}"}
        if now is not None:
            headers["X-Memgate-Now"] = now.isoformat()
        return await self.client.request(method, path, json=body, headers=headers)

    async def active_facts(self, user: str, key: str = "reader") -> list[dict[str, Any]]:
        """Every active fact of the user, all scopes and sensitivities (the reader key)."""
        items: list[dict[str, Any]] = []
        cursor = None
        while True:
            q = f"/v1/users/{user}/facts?status=active&limit=200"
            r = await self.call("GET", q + (f"&cursor={cursor}" if cursor else ""), key)
            r.raise_for_status()
            page = r.json()
            items.extend(page["items"])
            cursor = page.get("next_cursor")
            if not cursor:
                return items

    async def pending_candidates(self, user: str) -> list[dict[str, Any]]:
        if R_CANDS not in self.routes:
            return []
        r = await self.call(
            "GET", f"/v1/users/{user}/candidates?status=pending&limit=200", "reader"
        )
        r.raise_for_status()
        return list(r.json()["items"])

    async def observe(self, user: str, messages: list[dict[str, Any]]) -> str:
        r = await self.call("POST", f"/v1/users/{user}/observations", body={"messages": messages})
        if r.status_code != 202:
            raise RuntimeError(f"observations for {user}: {r.status_code} {r.text[:300]}")
        return str(r.json()["job_id"])

    async def wait_jobs(self, job_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Poll GET /v1/jobs/{id} until every job is done or failed (bounded in time)."""
        pending = set(job_ids)
        out: dict[str, dict[str, Any]] = {}
        deadline = time.monotonic() + JOB_TIMEOUT_S
        while pending and time.monotonic() < deadline:
            for jid in list(pending):
                r = await self.call("GET", f"/v1/jobs/{jid}")
                if r.status_code == 200 and r.json().get("state") in ("done", "failed"):
                    out[jid] = r.json()
                    pending.discard(jid)
            if pending:
                await asyncio.sleep(0.2)
        for jid in pending:
            out[jid] = {"state": "timeout"}
        return out


# ---------------------------------------------------------------------------------------
# Write path
# ---------------------------------------------------------------------------------------


def _stored_items(facts: list[dict[str, Any]], cands: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**f, "_kind": "fact"} for f in facts] + [{**c, "_kind": "candidate"} for c in cands]


_NEEDLE = re.compile(r"\S{8,}")


_RAW_CATEGORIES = ("secret", "government_id", "payment_card")


def _case_texts(case: dict[str, Any]) -> list[str]:
    if "body" in case:
        body = case["body"]
        return [body["statement"], json.dumps(body.get("value"), ensure_ascii=False)]
    return [m["content"] for m in messages_of(case)]


def _needles(case: dict[str, Any]) -> list[str]:
    """Raw fragments of a secret/ID/card that must not rest anywhere
    (docs/gate.md#secrets-never-rest)."""
    texts = _case_texts(case)
    out = []
    for text in texts:
        for tok in _NEEDLE.findall(text or ""):
            if re.search(r"\d", tok):
                out.append(tok.strip("\"',.，。"))
        digits = re.sub(r"[\s-]", "", text or "")
        out.extend(re.findall(r"\d{13,19}", digits))
    return [n for n in out if len(n) >= 8]


class WriteStats:
    """Accumulates precision/recall/escapes over explicit writes and observations."""

    def __init__(self) -> None:
        self.stored_good = 0
        self.stored_total = 0
        self.recall = Counter()
        self.recall_by_path: dict[str, Counter] = defaultdict(Counter)
        self.escapes: dict[str, Counter] = defaultdict(Counter)  # hits = escaped
        self.sensitive = Counter()  # hits = sensitive stored without consent/instruction
        self.decisions = Counter()
        self.outcomes = Counter()
        self.residue = Counter()  # hits = a raw secret found in the audit trail
        # hits = the raw secret/ID/card itself is in a stored fact or candidate; an escape
        # that is only a redacted shell ("the user's key [REDACTED:secret]") is not counted
        self.raw_stored = Counter()
        self.misses: list[dict[str, Any]] = []


async def eval_explicit_writes(h: Harness, suite: Suite, st: WriteStats) -> dict[str, Any]:
    h.require(R_FACTS)

    async def one(case: dict[str, Any]) -> dict[str, Any]:
        user = case["id"]
        role = case.get("role", "agent")
        r = await h.call("POST", f"/v1/users/{user}/facts", role, post_body(case["body"]))
        body = r.json() if r.headers.get("content-type", "").startswith("application/json") else {}
        facts = await h.active_facts(user)
        cands = await h.pending_candidates(user)
        audit_text = ""
        if case["category"] in _RAW_CATEGORIES:
            a = await h.call("GET", f"/v1/users/{user}/audit?limit=200", "ops")
            audit_text = a.text if a.status_code == 200 else ""
        return {
            "case": case,
            "status": r.status_code,
            "decision": body.get("decision"),
            "reason": body.get("reason"),
            "error": body.get("error"),
            "items": _stored_items(facts, cands),
            "audit": audit_text,
        }

    results = await bounded(suite.writes, one)
    for res in results:
        case, items = res["case"], res["items"]
        exp = case["expect"]
        ok = res["decision"] == exp["decision"] and res["reason"] == exp.get("reason")
        st.decisions.add(ok, case["id"])
        if not ok:
            st.misses.append(
                {
                    "id": case["id"],
                    "path": "explicit",
                    "expected": exp,
                    "got": {
                        "status": res["status"],
                        "decision": res["decision"],
                        "reason": res["reason"],
                        "error": res["error"],
                    },
                }
            )
        good = case["gold"] == "good"
        st.stored_total += len(items)
        st.stored_good += len(items) if good else 0
        if good:
            st.recall.add(bool(items), case["id"])
            st.recall_by_path["explicit"].add(bool(items), case["id"])
        else:
            st.escapes[case["category"]].add(bool(items), case["id"])
        if case.get("sensitive") and not _consented(case["body"]):
            st.sensitive.add(bool(items), case["id"])
        if res["audit"]:
            leaked = [n for n in _needles(case) if n in res["audit"]]
            st.residue.add(bool(leaked), case["id"])
        _check_raw(st, case, items)
    return {"cases": len(results)}


def _check_raw(st: WriteStats, case: dict[str, Any], items: list[dict[str, Any]]) -> None:
    if case["category"] not in _RAW_CATEGORIES:
        return
    text = json.dumps(items, ensure_ascii=False, default=str)
    flat = re.sub(r"[\s-]", "", text)
    raw = [n for n in _needles(case) if n in text or (n.isdigit() and n in flat)]
    st.raw_stored.add(bool(raw), case["id"])


def _consented(body: dict[str, Any]) -> bool:
    kind = body.get("kind", (body.get("source") or {}).get("kind"))
    return bool(body.get("consent")) or kind in ("explicit_instruction", "admin_policy", "system")


async def eval_observations(h: Harness, suite: Suite, st: WriteStats) -> dict[str, Any]:
    h.require(R_OBS, R_JOBS)
    cases = suite.observations
    # Post everything first, then wait: the worker drains the queue while we poll.
    job_of: dict[str, str] = {}

    async def post(case: dict[str, Any]) -> None:
        job_of[case["id"]] = await h.observe(case["id"], messages_of(case))

    await bounded(cases, post)
    jobs = await h.wait_jobs(list(job_of.values()))
    failed = {cid: jobs[j] for cid, j in job_of.items() if jobs[j].get("state") != "done"}

    async def collect(case: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        return await h.active_facts(case["id"]), await h.pending_candidates(case["id"])

    stored = await bounded(cases, collect)
    for case, (facts, cands) in zip(cases, stored, strict=True):
        exp = case["expect"]
        items = _stored_items(facts, cands)
        good_items: set[int] = set()
        golds = exp.get("facts") or []
        all_found = True
        exact = True
        for g in golds:
            in_facts = [
                i for i, it in enumerate(items) if it["_kind"] == "fact" and item_matches(it, g)
            ]
            in_pool = [
                i
                for i, it in enumerate(items)
                if it["_kind"] == "candidate" and item_matches(it, g)
            ]
            good_items.update(in_facts + in_pool)
            hit = bool(in_facts) or (exp["outcome"] == "pending" and bool(in_pool))
            st.recall.add(hit, f"{case['id']}:{g.get('predicate') or g}")
            st.recall_by_path["observations"].add(hit, f"{case['id']}")
            all_found &= hit
            exact &= bool(in_facts) if exp["outcome"] == "written" else bool(in_pool)
        st.stored_total += len(items)
        st.stored_good += len(good_items)
        if exp["outcome"] == "nothing":
            exact = not items
            st.escapes[case["category"]].add(bool(items), case["id"])
        st.outcomes.add(exact and case["id"] not in failed, case["id"])
        if case.get("sensitive") and case["gold"] == "bad":
            st.sensitive.add(bool(items), case["id"])
        _check_raw(st, case, items)
        if not exact or not all_found or case["id"] in failed:
            st.misses.append(
                {
                    "id": case["id"],
                    "path": "observations",
                    "messages": [
                        m if isinstance(m, str) else m["content"] for m in case["messages"]
                    ],
                    "expected": exp,
                    "job": failed.get(case["id"], {}).get("state", "done"),
                    "got": [
                        {k: it.get(k) for k in ("_kind", "type", "predicate", "value", "statement")}
                        for it in items
                    ],
                }
            )
    return {"cases": len(cases), "jobs_not_done": len(failed)}


# ---------------------------------------------------------------------------------------
# Conflicts and duplicates
# ---------------------------------------------------------------------------------------


def _final_ok(active: list[dict[str, Any]], final: list[dict[str, Any]]) -> tuple[bool, Any]:
    """The exact active state for the (scope, predicate) pairs the gold names."""
    pairs = {(g.get("scope", "global"), g["predicate"]) for g in final if "predicate" in g}
    actual = [f for f in active if (f["scope"], f.get("predicate")) in pairs]
    unmatched = list(actual)
    ok = True
    for g in final:
        if "statement_contains" in g:
            ok &= any(item_matches(f, g) for f in active)
            continue
        found = next(
            (
                f
                for f in unmatched
                if f["scope"] == g.get("scope", "global")
                and f.get("predicate") == g["predicate"]
                and value_matches(f.get("value"), g["value"])
                and bool(f.get("contested")) == bool(g.get("contested", False))
            ),
            None,
        )
        if found is None:
            ok = False
        else:
            unmatched.remove(found)
    ok &= not unmatched  # a value that should be gone is still active
    got = [
        {
            "scope": f["scope"],
            "predicate": f.get("predicate"),
            "value": f.get("value"),
            "contested": f.get("contested"),
            "statement": f.get("statement"),
        }
        for f in active
    ]
    return ok, got


async def eval_conflicts(h: Harness, suite: Suite) -> dict[str, Any]:
    h.require(R_FACTS)
    by_rule: dict[str, Counter] = defaultdict(Counter)
    steps_c = Counter()
    misses: list[dict[str, Any]] = []

    async def one(sc: dict[str, Any]) -> None:
        user = sc["id"]
        prev: str | None = None
        got_steps = []
        steps_ok = True
        for i, step in enumerate(sc["steps"]):
            role = step.get("role", "agent")
            if step.get("patch_previous") and prev:
                r = await h.call(
                    "PATCH", f"/v1/users/{user}/facts/{prev}", role, request_body(step["body"])
                )
            else:
                r = await h.call("POST", f"/v1/users/{user}/facts", role, post_body(step["body"]))
            body = r.json()
            if body.get("fact"):
                prev = body["fact"]["id"]
            exp = step["expect"]
            ok = body.get("decision") == exp["decision"] and body.get("reason") == exp.get("reason")
            steps_c.add(ok, f"{sc['id']}/{i}")
            steps_ok &= ok
            got_steps.append(
                {
                    "status": r.status_code,
                    "decision": body.get("decision"),
                    "reason": body.get("reason"),
                    "error": body.get("error"),
                }
            )
        final_ok, got_final = _final_ok(await h.active_facts(user), sc["final"])
        by_rule[sc["rule"]].add(steps_ok and final_ok, sc["id"])
        if not (steps_ok and final_ok):
            misses.append(
                {
                    "id": sc["id"],
                    "rule": sc["rule"],
                    "steps": got_steps,
                    "expected_steps": [s["expect"] for s in sc["steps"]],
                    "final_expected": sc["final"],
                    "final_active": got_final,
                }
            )

    await bounded(suite.conflicts, one)
    total = Counter()
    for c in by_rule.values():
        total.hits += c.hits
        total.total += c.total
    return {"by_rule": by_rule, "all": total, "steps": steps_c, "misses": misses}


async def eval_duplicates(h: Harness, suite: Suite) -> dict[str, Any]:
    h.require(R_FACTS)
    has_obs = R_OBS in h.routes and R_JOBS in h.routes
    groups = [
        g
        for g in suite.duplicates
        if has_obs or all(w.get("via", "facts") == "facts" for w in g["writes"])
    ]

    async def write_group(g: dict[str, Any]) -> None:
        for w in g["writes"]:  # in order: the second write must see the first
            if w.get("via", "facts") == "facts":
                await h.call("POST", f"/v1/users/{g['id']}/facts", "agent", post_body(w["body"]))
            else:
                job = await h.observe(g["id"], messages_of(w))
                await h.wait_jobs([job])

    await bounded(groups, write_group)
    note = "consolidation sweep ran"
    swept: int | None = None
    try:
        from app import clock
        from workers.maintenance import sweep_consolidation

        swept = await sweep_consolidation(h.app.state.ctx, clock.now())
    except ImportError:
        note = "no consolidation sweep in workers/maintenance.py: counted as written"
    active_total = dup_total = over_merged = 0
    per_group = []
    for g in groups:
        n = len(await h.active_facts(g["id"]))
        dup = max(0, n - g["distinct"])
        over = max(0, g["distinct"] - n)
        active_total += n
        dup_total += dup
        over_merged += over
        per_group.append(
            {
                "id": g["id"],
                "active": n,
                "distinct": g["distinct"],
                "duplicates": dup,
                "over_merged": over,
            }
        )
    return {
        "groups": len(groups),
        "skipped_groups": len(suite.duplicates) - len(groups),
        "active": active_total,
        "duplicates": dup_total,
        "over_merged": over_merged,
        "rate": ratio(dup_total, active_total),
        "swept": swept,
        "note": note,
        "per_group": per_group,
    }


# ---------------------------------------------------------------------------------------
# Read path
# ---------------------------------------------------------------------------------------


async def seed_profiles(h: Harness, suite: Suite) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Seed every profile; returns key -> meta (id, tenant, user, scope, state) and the
    seed problems (a fact that did not land in the state the scenario needs)."""
    meta: dict[str, dict[str, Any]] = {}
    problems: list[str] = []

    async def seed(p: dict[str, Any]) -> None:
        tenant = p.get("tenant", "main")
        key = "other" if tenant == "other" else "agent"
        for f in p["facts"]:  # in order: supersession depends on it
            r = await h.call("POST", f"/v1/users/{p['user']}/facts", key, post_body(f["body"]))
            body = r.json()
            fact = body.get("fact")
            if not fact:
                problems.append(f"{f['key']}: seed write answered {r.status_code} {body}")
                continue
            meta[f["key"]] = {
                "id": fact["id"],
                "tenant": tenant,
                "user": p["user"],
                "scope": fact["scope"],
                "state": f.get("state", "active"),
                "api_key": key,
            }
        for f in p["facts"]:
            if f.get("state") == "deleted" and f["key"] in meta:
                r = await h.call(
                    "DELETE", f"/v1/users/{p['user']}/facts/{meta[f['key']]['id']}", key
                )
                if r.status_code != 200:
                    problems.append(f"{f['key']}: delete answered {r.status_code}")

    await bounded(suite.profiles, seed)
    from app import clock

    now = clock.now()
    for k, m in meta.items():  # check each fact reached the state the gold assumes
        r = await h.call(
            "GET",
            f"/v1/users/{m['user']}/facts/{m['id']}",
            "other_reader" if m["tenant"] == "other" else "reader",
        )
        if m["state"] == "deleted":
            if r.status_code != 404:
                problems.append(f"{k}: deleted fact answers {r.status_code}")
            continue
        row = r.json()
        if m["state"] == "superseded" and row.get("status") != "superseded":
            problems.append(f"{k}: expected superseded, is {row.get('status')}")
        if m["state"] == "expired":
            exp = row.get("expires_at")
            if not exp or datetime.fromisoformat(exp) > now:
                problems.append(f"{k}: expected expired, expires_at={exp}")
        if m["state"] == "active" and row.get("status") != "active":
            problems.append(f"{k}: expected active, is {row.get('status')}")
    return meta, problems


async def eval_recall(h: Harness, suite: Suite) -> dict[str, Any]:
    h.require(R_FACTS, R_RECALL)
    meta, seed_problems = await seed_profiles(h, suite)
    by_id = {m["id"]: k for k, m in meta.items()}

    async def one(q: dict[str, Any]) -> dict[str, Any]:
        body: dict[str, Any] = {"query": q["query"], "k": K}
        if q.get("scope"):
            body["scope"] = q["scope"]
        r = await h.call("POST", f"/v1/users/{q['user']}/recall", "agent", body)
        return {"q": q, "status": r.status_code, "resp": r.json()}

    results = await bounded(suite.queries, one)
    precisions, recalls = [], []
    returned = relevant_returned = needed_total = needed_hit = 0
    stale = forbidden = noise = 0
    leaks: list[dict[str, Any]] = []
    unknown: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    per_query = []
    for res in results:
        q, resp = res["q"], res["resp"]
        if res["status"] != 200:
            errors.append({"id": q["id"], "status": res["status"], "body": resp})
            continue
        keys = []
        for f in resp.get("facts", []):
            k = by_id.get(f["id"])
            if k is None:
                unknown.append({"query": q["id"], "fact": f})
                continue
            keys.append(k)
            m = meta[k]
            allowed_scopes = {"global", q.get("scope") or "global"}
            if m["tenant"] != "main" or m["user"] != q["user"] or m["scope"] not in allowed_scopes:
                leaks.append(
                    {
                        "query": q["id"],
                        "key": k,
                        "owner": m["user"],
                        "tenant": m["tenant"],
                        "scope": m["scope"],
                    }
                )
        needed = set(q.get("needed") or [])
        rel = needed | set(q.get("ok") or [])
        got = set(keys)
        returned += len(keys)
        relevant_returned += len(got & rel)
        if keys:
            precisions.append(len(got & rel) / len(keys))
        if needed:
            recalls.append(len(got & needed) / len(needed))
            needed_total += len(needed)
            needed_hit += len(got & needed)
        n_stale = sum(1 for k in keys if meta[k]["state"] != "active")
        stale += n_stale
        forbidden += len(got & set(q.get("forbidden") or []))
        if not rel:
            noise += len(keys)
        per_query.append(
            {
                "id": q["id"],
                "lang": q["lang"],
                "query": q["query"],
                "scope": q.get("scope"),
                "returned": keys,
                "needed": sorted(needed),
                "ok": sorted(rel - needed),
                "missing": sorted(needed - got),
                "irrelevant": sorted(got - rel),
                "stale": [k for k in keys if meta[k]["state"] != "active"],
                "tier": resp.get("tier"),
                "tokens": resp.get("tokens"),
            }
        )
    return {
        "queries": len(results),
        "k": K,
        "precision_macro": mean(precisions),
        "precision_micro": ratio(relevant_returned, returned),
        "recall_macro": mean(recalls),
        "recall_micro": ratio(needed_hit, needed_total),
        "returned": returned,
        "stale_returned": stale,
        "stale_rate": ratio(stale, returned),
        "forbidden_returned": forbidden,
        "noise_on_offtopic": noise,
        "leaks": leaks,
        "unknown_ids": unknown,
        "errors": errors,
        "seed_problems": seed_problems,
        "per_query": per_query,
    }


async def eval_tiers(h: Harness, suite: Suite) -> dict[str, Any]:
    h.require(R_FACTS, R_RECALL)
    tiers = Counter()
    admission = Counter()
    misses: list[dict[str, Any]] = []

    async def one(t: dict[str, Any]) -> None:
        user = t["id"]
        at = TIER_T0
        writes = [
            {
                "type": "semantic",
                "predicate": "preferred_cuisine",
                "value": "sushi",
                "statement": "The user enjoys sushi",
                "source": {"kind": "user_message"},
            },
            {
                "type": "profile",
                "predicate": "preferred_output_format",
                "value": "table",
                "statement": "The user prefers tables",
                "source": {"kind": "user_message"},
            },
        ]
        if t["interaction"] == "explicit":  # an explicit instruction is a user interaction
            writes.append(
                {
                    "type": "semantic",
                    "predicate": "allergy",
                    "value": "peanut",
                    "statement": "The user is allergic to peanuts",
                    "source": {"kind": "explicit_instruction"},
                }
            )
        for w in writes:
            await h.call("POST", f"/v1/users/{user}/facts", "agent", w, now=at)
        later = at + timedelta(days=t["gap_days"])
        r = await h.call(
            "POST",
            f"/v1/users/{user}/recall",
            "agent",
            {"query": "Recommend a dinner place for tonight", "k": K},
            now=later,
        )
        resp = r.json()
        ok = resp.get("tier") == t["expect"]
        tiers.add(ok, t["id"])
        adm_ok = True
        if t.get("only_explicit"):
            facts = resp.get("facts", [])
            only = all(
                f.get("source_kind") == "explicit_instruction" and f.get("confidence", 0) >= 0.9
                for f in facts
            )
            kept = any(f.get("predicate") == "allergy" for f in facts)
            adm_ok = only and kept
            admission.add(adm_ok, t["id"])
        if not (ok and adm_ok):
            misses.append(
                {
                    "id": t["id"],
                    "expected": t["expect"],
                    "got": resp.get("tier"),
                    "facts": [
                        (f.get("predicate"), f.get("source_kind")) for f in resp.get("facts", [])
                    ],
                    "status": r.status_code,
                }
            )

    await bounded(suite.tiers, one)
    return {"tiers": tiers, "new_tier_admission": admission, "misses": misses}


# ---------------------------------------------------------------------------------------
# Orchestration
# ---------------------------------------------------------------------------------------


async def _provision(database_url: str) -> dict[str, str]:
    """Two tenants (the second is cross-tenant bait) and the keys the scenarios use."""
    import asyncpg

    from app.cli import create_key, create_tenant

    conn = await asyncpg.connect(database_url)
    try:
        main_t = str(await create_tenant(conn, f"eval-{uuid.uuid4().hex[:8]}"))
        other_t = str(await create_tenant(conn, f"eval-other-{uuid.uuid4().hex[:8]}"))
        return {
            "agent": await create_key(conn, main_t, "agent"),
            "ops": await create_key(conn, main_t, "ops"),
            "admin": await create_key(conn, main_t, "admin"),
            # limited to one project scope: writes elsewhere are scope_forbidden
            "scoped": await create_key(conn, main_t, "agent", scopes=["project:clarity"]),
            # sees every sensitivity, so "was anything stored?" is never hidden from us
            "reader": await create_key(conn, main_t, "ops", max_sensitivity="restricted"),
            "other": await create_key(conn, other_t, "agent"),
            "other_reader": await create_key(conn, other_t, "ops", max_sensitivity="restricted"),
        }
    finally:
        await conn.close()


def _start_worker() -> tuple[Any, asyncio.Task[Any]]:
    """A real arq worker on this event loop, against the same Redis (no signal handlers:
    the eval owns the process)."""
    from arq.worker import Worker

    from workers.settings import WorkerSettings as WS

    worker = Worker(
        functions=WS.functions,
        queue_name=WS.queue_name,
        redis_settings=WS.redis_settings,
        on_startup=WS.on_startup,
        on_shutdown=WS.on_shutdown,
        job_timeout=WS.job_timeout,
        max_tries=WS.max_tries,
        keep_result=WS.keep_result,
        max_jobs=WS.max_jobs,
        poll_delay=0.1,
        handle_signals=False,
        log_results=False,
    )
    return worker, asyncio.create_task(worker.async_run())


async def _stop_worker(worker: Any, task: asyncio.Task[Any]) -> None:
    task.cancel()
    try:
        await task
    except (asyncio.CancelledError, Exception):  # shutting down either way
        pass
    await worker.close()


def _routes(app: Any) -> set[tuple[str, str]]:
    """(METHOD, path) of every API route, from the generated OpenAPI document: it lists
    routes of included routers too (app.routes may hold them as nested router objects)."""
    paths = app.openapi().get("paths", {})
    return {(m.upper(), p) for p, ops in paths.items() for m in ops}


@contextlib.asynccontextmanager
async def running_stack(data_dir: Path) -> AsyncIterator[Harness]:
    """The whole private stack, up for the duration of the block: embedded PostgreSQL and
    Redis under `data_dir`, migrations, the eval keys, the app (its lifespan) in process
    and a real arq worker on this loop. Yields the HTTP harness every section uses (the
    gate corpus, `evals/gate_corpus.py`, runs on it too)."""
    from app.config import get_settings
    from app.embedded import EmbeddedStack
    from app.store.migrate import migrate

    stack = EmbeddedStack(data_dir / "stack", fast=True)
    stack.start()
    try:
        os.environ["DATABASE_URL"] = stack.database_url
        os.environ["REDIS_URL"] = stack.redis_url
        get_settings.cache_clear()
        await migrate(stack.database_url)
        keys = await _provision(stack.database_url)

        import httpx

        from app.main import create_app

        app = create_app()
        routes = _routes(app)
        async with app.router.lifespan_context(app):
            worker, task = _start_worker()
            try:
                transport = httpx.ASGITransport(app=app)
                async with httpx.AsyncClient(
                    transport=transport, base_url="http://memgate.eval", timeout=60
                ) as client:
                    yield Harness(client, app, keys, routes)
            finally:
                await _stop_worker(worker, task)
    finally:
        stack.stop()


async def run_sections(
    report: dict[str, Any], sections: Sequence[tuple[str, Callable[[], Awaitable[Any]]]]
) -> None:
    """Run each section in turn; a skip or an error is recorded, never fatal."""
    for name, fn in sections:
        t0 = time.monotonic()
        try:
            report["sections"][name] = await fn()
        except SectionSkipped as exc:
            report["skipped"][name] = str(exc)
        except Exception:
            report["errors"][name] = traceback.format_exc()
        report.setdefault("timings_s", {})[name] = round(time.monotonic() - t0, 2)


async def run_suite(
    suite: Suite | None,
    data_dir: Path,
    extra: Sequence[tuple[str, Callable[[Harness], Awaitable[Any]]]] = (),
) -> dict[str, Any]:
    """The labeled suite (None: skip it) and then any extra sections, on one stack."""
    report: dict[str, Any] = {"sections": {}, "skipped": {}, "errors": {}}
    async with running_stack(data_dir) as h:
        sections: list[tuple[str, Callable[[], Awaitable[Any]]]] = []
        if suite is not None:
            ws = WriteStats()
            sections += [
                ("explicit_writes", lambda: eval_explicit_writes(h, suite, ws)),
                ("observations", lambda: eval_observations(h, suite, ws)),
                ("conflicts", lambda: eval_conflicts(h, suite)),
                ("duplicates", lambda: eval_duplicates(h, suite)),
                ("recall", lambda: eval_recall(h, suite)),
                ("tiers", lambda: eval_tiers(h, suite)),
            ]
            report["writes"] = ws
        for name, fn in extra:
            sections.append((name, lambda fn=fn: fn(h)))  # type: ignore[misc]
        await run_sections(report, sections)
    return report


# ---------------------------------------------------------------------------------------
# Reporting
# ---------------------------------------------------------------------------------------


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, Counter):
        return obj.as_dict()
    if isinstance(obj, WriteStats):
        return {k: _jsonable(v) for k, v in vars(obj).items()}
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    return obj


def summarize(report: dict[str, Any]) -> tuple[list[tuple[str, str, str]], dict[str, Any]]:
    """The printed rows and the headline figures (also in the JSON)."""
    rows: list[tuple[str, str, str]] = []
    head: dict[str, Any] = {}
    secs, ws = report["sections"], report.get("writes")
    skipped = report["skipped"]

    rows.append(("-- write path", "", ""))
    if ws is not None and ("explicit_writes" in secs or "observations" in secs):
        prec = ratio(ws.stored_good, ws.stored_total)
        head.update(write_precision=prec, write_recall=ws.recall.rate)
        rows.append(
            (
                "write precision",
                f"{fmt(prec)} ({ws.stored_good}/{ws.stored_total})",
                "stored facts+candidates that are gold-good",
            )
        )
        rows.append(("write recall", ws.recall.cell(), "gold-good facts stored or pooled"))
        for path, c in sorted(ws.recall_by_path.items()):
            rows.append((f"  recall: {path}", c.cell(), ""))
        rows.append(
            (
                "gate decision accuracy",
                ws.decisions.cell(),
                "explicit writes: decision+reason exactly as gold",
            )
        )
        if ws.outcomes.total:
            rows.append(
                (
                    "extraction outcome accuracy",
                    ws.outcomes.cell(),
                    "observations: written/pending/nothing exactly as gold",
                )
            )
        esc = Counter()
        for c in ws.escapes.values():
            esc.hits += c.hits
            esc.total += c.total
        head["bad_write_escape_rate"] = esc.rate
        rows.append(("bad-write escape rate", esc.cell(), "lower is better"))
        for cat, c in sorted(ws.escapes.items()):
            rows.append((f"  escape: {cat}", c.cell(), " ".join(c.hit_ids[:3])))
        head["sensitive_write_rate"] = ws.sensitive.rate
        rows.append(
            (
                "sensitive-write rate",
                ws.sensitive.cell(),
                "sensitive stored w/o consent or instruction",
            )
        )
        if ws.raw_stored.total:
            rows.append(
                (
                    "  raw secret/ID/card stored",
                    ws.raw_stored.cell(),
                    "escapes above may be redacted shells; this counts the raw text",
                )
            )
        if ws.residue.total:
            rows.append(
                (
                    "secret residue in audit",
                    ws.residue.cell(),
                    "raw secret/ID/card text found in audit (must be 0)",
                )
            )
    for name in ("explicit_writes", "observations"):
        if name in skipped:
            rows.append((name, "SKIPPED", skipped[name]))
    if "conflicts" in secs:
        c = secs["conflicts"]
        head["conflict_accuracy"] = c["all"].rate
        rows.append(("conflict-resolution accuracy", c["all"].cell(), "steps and final state"))
        for rule, rc in sorted(c["by_rule"].items()):
            rows.append((f"  rule: {rule}", rc.cell(), ""))
        rows.append(("  conflict step decisions", c["steps"].cell(), ""))
    elif "conflicts" in skipped:
        rows.append(("conflict-resolution accuracy", "SKIPPED", skipped["conflicts"]))
    if "duplicates" in secs:
        d = secs["duplicates"]
        head["duplicate_rate"] = d["rate"]
        rows.append(
            (
                "duplicate rate after consolidation",
                f"{fmt(d['rate'])} ({d['duplicates']}/{d['active']})",
                d["note"],
            )
        )
        rows.append(("  over-merged (negation etc.)", str(d["over_merged"]), "distinct facts lost"))
    elif "duplicates" in skipped:
        rows.append(("duplicate rate", "SKIPPED", skipped["duplicates"]))

    rows.append(("-- read path", "", ""))
    if "recall" in secs:
        r = secs["recall"]
        head.update(
            precision_at_k=r["precision_macro"],
            recall_at_k=r["recall_macro"],
            stale_use_rate=r["stale_rate"],
            leakage=len(r["leaks"]),
        )
        rows.append(
            (
                f"precision@{r['k']} (macro / micro)",
                f"{fmt(r['precision_macro'])} / {fmt(r['precision_micro'])}",
                f"{r['queries']} queries, {r['returned']} facts returned",
            )
        )
        rows.append(
            (
                f"needed-memory recall@{r['k']} (macro / micro)",
                f"{fmt(r['recall_macro'])} / {fmt(r['recall_micro'])}",
                "",
            )
        )
        rows.append(
            (
                "stale-use rate",
                f"{fmt(r['stale_rate'])} ({r['stale_returned']})",
                "superseded/expired/deleted returned",
            )
        )
        rows.append(("forbidden facts returned", str(r["forbidden_returned"]), "labelled must-not"))
        rows.append(
            (
                "facts on off-topic queries",
                str(r["noise_on_offtopic"]),
                "queries with nothing relevant",
            )
        )
        by: dict[str, int] = defaultdict(int)
        for leak in r["leaks"]:
            by[leak.get("kind", "leak")] += 1
        rows.append(
            (
                "LEAKAGE (must be 0)",
                str(len(r["leaks"])),
                ", ".join(f"{k}={v}" for k, v in by.items()) or "cross-scope/user/tenant",
            )
        )
        if r["seed_problems"]:
            rows.append(("seed problems", str(len(r["seed_problems"])), r["seed_problems"][0][:60]))
        if r["errors"]:
            rows.append(("recall errors", str(len(r["errors"])), str(r["errors"][0])[:60]))
    elif "recall" in skipped:
        rows.append(("recall", "SKIPPED", skipped["recall"]))
    if "tiers" in secs:
        t = secs["tiers"]
        head["tier_correctness"] = t["tiers"].rate
        rows.append(("tier correctness", t["tiers"].cell(), "gap since last interaction"))
        if t["new_tier_admission"].total:
            rows.append(("  tier new: only explicit>=0.9", t["new_tier_admission"].cell(), ""))
    elif "tiers" in skipped:
        rows.append(("tier correctness", "SKIPPED", skipped["tiers"]))
    for name, err in report["errors"].items():
        rows.append((f"ERROR in {name}", "!", err.strip().splitlines()[-1][:80]))
    return rows, head


def _leak_kinds(report: dict[str, Any], suite: Suite) -> None:
    """Label each leak precisely (the summary needs the query's user)."""
    r = report["sections"].get("recall")
    if not r:
        return
    users = {q["id"]: q["user"] for q in suite.queries}
    for leak in r["leaks"]:
        if leak["tenant"] != "main":
            leak["kind"] = "cross_tenant"
        elif leak["owner"] != users.get(leak["query"]):
            leak["kind"] = "cross_user"
        else:
            leak["kind"] = "cross_scope"


def _print_misses(report: dict[str, Any], limit: int = 12) -> None:
    """The first concrete misses, so a developer sees what to fix without the JSON."""
    lines: list[str] = []
    ws = report.get("writes")
    for m in ws.misses if ws is not None else []:
        what = m.get("messages") or m["id"]
        lines.append(f"write  {m['id']}: expected {m['expected']} got {m['got']} <- {what}")
    for m in report["sections"].get("conflicts", {}).get("misses", []):
        lines.append(f"rule   {m['id']}: steps {m['steps']} final {m['final_active']}")
    for q in report["sections"].get("recall", {}).get("per_query", []):
        if q["missing"]:
            lines.append(f"recall {q['id']} {q['query']!r}: missing {q['missing']}")
    for m in report["sections"].get("tiers", {}).get("misses", []):
        lines.append(f"tier   {m['id']}: expected {m['expected']} got {m['got']} {m['facts']}")
    if lines:
        print(f"misses ({len(lines)}; all in the JSON report):")
        for line in lines[:limit] + (["..."] if len(lines) > limit else []):
            print("  " + (line if len(line) <= 220 else line[:217] + "..."))


def _gate_only(argv: Sequence[str]) -> bool | None:
    """`python -m evals gate` (or MEMGATE_EVAL=gate): the gate corpus alone. None: bad args.
    `python -m evals gate train`: its train split alone (for tuning: nothing of the held-out
    split is run or printed)."""
    if list(argv) in (["gate"], ["gate", "train"]):
        return True
    if argv:
        return None
    return os.environ.get("MEMGATE_EVAL", "").strip().lower() == "gate"


def _write_report(name: str, started: datetime, out: dict[str, Any]) -> None:
    REPORTS.mkdir(exist_ok=True)
    text = json.dumps(out, ensure_ascii=False, indent=2, default=str)
    stamped = REPORTS / f"{name}-{started:%Y%m%dT%H%M%SZ}.json"
    stamped.write_text(text, encoding="utf-8")
    (REPORTS / f"{name}-latest.json").write_text(text, encoding="utf-8")
    print(f"report: {stamped.relative_to(ROOT)} (and reports/{name}-latest.json)")


def main(argv: Sequence[str] | None = None) -> int:
    from evals import gate_corpus

    args = list(sys.argv[1:] if argv is None else argv)
    only_gate = _gate_only(args)
    if only_gate is None:
        print("usage: python -m evals [gate [train]]   (or MEMGATE_EVAL=gate)", file=sys.stderr)
        return 2
    corpus = gate_corpus.load_corpus()
    train_only = args[1:] == ["train"]
    problems = gate_corpus.validate_corpus(corpus)
    suite = None if only_gate else load_suite()
    if suite is not None:
        problems += validate(suite)
    if problems:
        print("eval data is invalid:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 2
    data_dir = Path(tempfile.mkdtemp(prefix="memgate-eval-"))
    _prepare_env(data_dir)
    started = datetime.now(UTC)
    t0 = time.monotonic()
    run_cases = (
        [c for c in corpus if gate_corpus.split_of(c["id"]) == "train"] if train_only else corpus
    )
    extra = [("gate_corpus", lambda h: gate_corpus.eval_gate_corpus(h, run_cases))]
    try:
        report = asyncio.run(run_suite(suite, data_dir, extra=extra))
    except Exception:
        traceback.print_exc()
        print("eval: the suite itself failed", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    gate = report["sections"].pop("gate_corpus", None)
    if suite is None:
        return _finish_gate_only(report, gate, started, time.monotonic() - t0)
    _leak_kinds(report, suite)
    rows, head = summarize(report)
    rec = report["sections"].get("recall")
    elapsed = time.monotonic() - t0
    title = (
        f"memgate eval — {started:%Y-%m-%d %H:%M}Z — {suite.labeled_turns()} labeled writes/turns, "
        f"{len(suite.queries)} recall queries, {len(suite.tiers)} tier scenarios, {elapsed:.0f}s"
    )
    print(table(rows, title))
    _print_misses(report)
    if gate is not None:
        gate_corpus.print_report(gate)
    for name, reason in report["skipped"].items():
        print(f"SKIPPED: {name}: {reason}")
    for name, err in report["errors"].items():
        print(f"ERROR in section {name}:\n{err}", file=sys.stderr)

    out = {
        "started_at": started.isoformat(),
        "elapsed_s": round(elapsed, 1),
        "data": {
            "labeled_turns": suite.labeled_turns(),
            "queries": len(suite.queries),
            "tiers": len(suite.tiers),
        },
        "headline": head,
        "table": [list(r) for r in rows],
        "skipped": report["skipped"],
        "errors": report["errors"],
        "timings_s": report.get("timings_s", {}),
        "writes": _jsonable(report.get("writes")),
        "sections": _jsonable(report["sections"]),
        "gate_corpus": gate_corpus.jsonable(gate) if gate is not None else None,
    }
    _write_report("eval", started, out)

    leakage = len(rec["leaks"]) if rec else 0
    if leakage:
        print(f"FAIL: {leakage} cross-scope/user/tenant leak(s) in recall", file=sys.stderr)
    return 1 if leakage or report["errors"] else 0


def _finish_gate_only(
    report: dict[str, Any], gate: dict[str, Any] | None, started: datetime, elapsed: float
) -> int:
    """`python -m evals gate`: the corpus tables, the machine-readable lines, the JSON."""
    from evals import gate_corpus

    print(f"memgate gate corpus — {started:%Y-%m-%d %H:%M}Z — {elapsed:.0f}s")
    if gate is not None:
        gate_corpus.print_report(gate)
        _write_report(
            "gate-corpus",
            started,
            {
                "started_at": started.isoformat(),
                "elapsed_s": round(elapsed, 1),
                **gate_corpus.jsonable(gate),
            },
        )
    for name, reason in report["skipped"].items():
        print(f"SKIPPED: {name}: {reason}")
    for name, err in report["errors"].items():
        print(f"ERROR in section {name}:\n{err}", file=sys.stderr)
    return 1 if report["errors"] or report["skipped"] else 0
