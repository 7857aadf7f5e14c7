"""`python -m bench.gate_timing`: the write gate's screening time per call, in process.

The candidates: every statement (and observation turn, as statement and evidence) of
the eval data, every write and conversation turn of the gate corpus, the detector test
tables, the disguise tables, and 20 candidates with
1–2 KB of evidence. Each is screened once to warm up, then five times measured (the
unmask cache cleared each round); p50/p95/p99 of single `gate.screen` calls. Nothing is
asserted: the figures are reported.

Twice: the rules alone, and the whole gate with the semantic classes — choosing the
segments to embed, the rule features, the classifiers and `gate.screen` — with the
embeddings computed beforehand (the write path computes them anyway; excluded here).
`make bench` runs it after the HTTP benchmark and prints its target line.
"""

from __future__ import annotations

import random
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

import yaml

from app.memory import gate, semantic, unmask
from app.memory.model import Candidate, FactType, KeyRights, Role, SourceKind
from app.memory.policy import Policy
from tests.unit import test_detectors, test_disguises

ROOT = Path(__file__).resolve().parents[1]
ROUNDS = 5


def _walk(node: Any, out: list[dict[str, Any]]) -> None:
    if isinstance(node, dict):
        if isinstance(node.get("statement"), str):
            out.append(node)
        elif isinstance(node.get("content"), str):
            out.append({"statement": node["content"], "evidence": node["content"]})
        for v in node.values():
            _walk(v, out)
    elif isinstance(node, list):
        for v in node:
            _walk(v, out)


def _gate_corpus_items() -> list[dict[str, Any]]:
    """Every write of the gate corpus (tests/data/gate) as it is posted, and every turn of
    its conversations as a statement: the texts the gate is measured on."""
    items: list[dict[str, Any]] = []
    for path in sorted((ROOT / "tests" / "data" / "gate").glob("*.yaml")):
        for case in (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("cases", []):
            body = case.get("body")
            if isinstance(body, dict) and isinstance(body.get("statement"), str):
                items.append(body)
            for turn in case.get("turns") or []:
                text = turn if isinstance(turn, str) else turn.get("content")
                if isinstance(text, str):
                    items.append({"statement": text})
    return items


def candidates() -> tuple[list[Candidate], int]:
    items: list[dict[str, Any]] = []
    for path in sorted((ROOT / "tests" / "data" / "eval").glob("*.yaml")):
        _walk(yaml.safe_load(path.read_text(encoding="utf-8")), items)
    from_eval = len(items)
    items += _gate_corpus_items()
    td = test_detectors
    for table in (
        td.SECRETS,
        td.GOVERNMENT_IDS,
        td.PAYMENT_CARDS,
        td.NOT_IDS_OR_CARDS,
        td.INJECTIONS,
        td.THIRD_PARTY,
        td.OWN_DATA,
        td.ORDINARY,
    ):
        items += [{"statement": text} for _, text in table]
    items += [{"statement": text} for _, text, _ in test_disguises.DISGUISED]
    items += [{"statement": text} for _, text in test_disguises.BENIGN]
    rng = random.Random(7)
    words = [t for _, t in td.ORDINARY] + [t for _, t in test_disguises.BENIGN]
    for _ in range(20):
        evidence = " ".join(rng.choice(words) for _ in range(40))[:1900]
        items.append({"statement": "The user prefers tables", "evidence": evidence})
    out = [
        Candidate(
            user_id="u",
            type=FactType.SEMANTIC,
            statement=it["statement"],
            value=it.get("value"),
            predicate=it.get("predicate"),
            source_kind=SourceKind.USER_MESSAGE,
            evidence=it.get("evidence") or (it.get("source") or {}).get("evidence"),
        )
        for it in items
    ]
    return out, from_eval


def _quantiles(times: list[float]) -> str:
    times = sorted(times)

    def q(p: float) -> float:
        return times[int(p * (len(times) - 1))] * 1e3

    return (
        f"p50={q(0.5):.3f} ms p95={q(0.95):.3f} ms p99={q(0.99):.3f} ms "
        f"max={times[-1] * 1e3:.3f} ms mean={statistics.mean(times) * 1e3:.3f} ms"
    )


def _embeddings(cands: list[Candidate]) -> dict[str, list[float]]:
    import asyncio

    from app.providers.embedders import USEM3Embedder

    texts = sorted({seg.text for c in cands for seg in semantic.segments(c)})
    vectors = asyncio.run(USEM3Embedder(isolate=False).embed_documents(texts))
    return dict(zip(texts, vectors, strict=True))


def main() -> None:
    policy = Policy.model_validate(
        yaml.safe_load((ROOT / "config" / "policy.yaml").read_text(encoding="utf-8"))
    )
    rights = KeyRights(key_id=uuid.uuid4(), role=Role.AGENT)
    cands, from_eval = candidates()
    by_text = _embeddings(cands)

    def whole_gate(c: Candidate) -> None:
        segs = semantic.segments(c)
        a = semantic.assess(segs, [by_text[s.text] for s in segs], semantic.MODEL)
        gate.screen(c, rights, policy, (), a)

    for label, run in (
        ("rules alone", lambda c: gate.screen(c, rights, policy, ())),
        ("rules + semantic", whole_gate),
    ):
        for c in cands:
            run(c)
        times: list[float] = []
        for _ in range(ROUNDS):
            unmask.views.cache_clear()
            for c in cands:
                start = time.perf_counter()
                run(c)
                times.append(time.perf_counter() - start)
        print(
            f"{label}: {len(cands)} candidates ({from_eval} from the eval data) x{ROUNDS}: "
            f"{_quantiles(times)}"
        )
    p95 = sorted(times)[int(0.95 * (len(times) - 1))] * 1e3  # the whole gate's, last above
    print(
        f"gate time alone ≤ 3 ms p95 (rules + semantic): {p95:.3f} ms → "
        f"{'met' if p95 <= 3.0 else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
