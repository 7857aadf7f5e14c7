"""The gate's use of the optional LLM judge (pure part): which classes are borderline, and
what each verdict does. Scores are set by hand: no embedder is involved."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from app.memory import gate, semantic
from app.memory.model import (
    Candidate,
    Decision,
    FactType,
    KeyRights,
    Origin,
    Reason,
    Role,
    SourceKind,
)
from app.memory.policy import Policy, effective_policy

ROOT = Path(__file__).resolve().parents[2]
DEFAULTS = yaml.safe_load((ROOT / "config" / "policy.yaml").read_text(encoding="utf-8"))
AGENT = KeyRights(key_id=uuid.uuid4(), role=Role.AGENT)
HEADS = ("injection", "authority", "transient", "personal")


def policy(enabled: bool = True, margin: float = 0.15) -> Policy:
    return effective_policy(
        DEFAULTS, {"gate": {"judge": {"enabled": enabled, "margin": margin}}}, strict=True
    )


def cand(statement: str = "I keep my notes in plain text files", **kw: Any) -> Candidate:
    kw.setdefault("source_kind", SourceKind.USER_MESSAGE)
    kw.setdefault("type", FactType.SEMANTIC)
    return Candidate(user_id="u1", statement=statement, **kw)


def scored(c: Candidate, **scores: float) -> semantic.Assessment:
    """An assessment where the statement scores `scores` per head (0 elsewhere)."""
    segs = tuple(semantic.segments(c))
    mat = np.zeros((len(segs), len(HEADS)), dtype=np.float32)
    for head, value in scores.items():
        mat[0, HEADS.index(head)] = value
    return semantic.Assessment(HEADS, segs, mat)


def test_the_default_policy_keeps_the_judge_off() -> None:
    off = Policy.model_validate(DEFAULTS)
    assert off.gate.judge.enabled is False
    c = cand()
    s = gate.screening(c, AGENT, off, (), scored(c, injection=0.65))
    assert s.result is None and s.wanted == ()


def test_only_scores_within_the_margin_below_a_threshold_are_borderline() -> None:
    c = cand()
    p = policy(margin=0.15)  # injection 0.7, authority 0.8, transient 0.85, personal 0.85
    s = gate.screening(
        c, AGENT, p, (), scored(c, injection=0.6, authority=0.5, transient=0.71, personal=0.2)
    )
    assert s.result is None
    assert s.wanted == ("injection", "transient")
    # at or above the threshold the class refuses by itself: nobody is asked
    s = gate.screening(c, AGENT, p, (), scored(c, injection=0.71))
    assert s.result is not None and s.result.reason is Reason.PROMPT_INJECTION
    assert s.wanted == ()


def test_a_harmful_verdict_refuses_as_the_class_would_and_says_so() -> None:
    c = cand()
    a = scored(c, injection=0.62)
    result = gate.screen(c, AGENT, policy(), (), a, {"injection": "harmful"})
    assert result is not None and result.decision is Decision.REJECTED
    assert result.reason is Reason.PROMPT_INJECTION
    assert result.detail["detector"] == "semantic_injection"
    assert result.detail["judge"] == "harmful" and result.detail["score"] == pytest.approx(0.62)
    c2 = cand("Feeling a bit sleepy after lunch today")
    result = gate.screen(
        c2, AGENT, policy(), (), scored(c2, transient=0.8), {"transient": "harmful"}
    )
    assert result is not None and result.reason is Reason.NOT_REUSABLE


def test_a_benign_verdict_lets_the_write_go_on() -> None:
    c = cand()
    assert (
        gate.screen(c, AGENT, policy(), (), scored(c, injection=0.62), {"injection": "benign"})
        is None
    )


@pytest.mark.parametrize(
    ("head", "score", "reason"),
    [
        ("injection", 0.6, Reason.PROMPT_INJECTION),
        ("authority", 0.7, Reason.PROMPT_INJECTION),
        ("transient", 0.75, Reason.NOT_REUSABLE),
        ("personal", 0.75, Reason.SENSITIVE_NEEDS_CONSENT),
    ],
)
def test_an_unavailable_judge_holds_the_write_pending_never_written(
    head: str, score: float, reason: Reason
) -> None:
    c = cand()
    result = gate.screen(c, AGENT, policy(), (), scored(c, **{head: score}), {head: "unavailable"})
    assert result is not None and result.decision is Decision.PENDING
    assert result.reason is reason
    assert result.detail["judge"] == "unavailable"
    assert result.detail["awaiting"] == "user_confirmation"


def test_a_rule_refusal_comes_first_and_asks_nobody() -> None:
    c = cand("my AWS secret key is wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    s = gate.screening(c, AGENT, policy(), (), scored(c, injection=0.65))
    assert s.result is not None and s.result.reason is Reason.SECRET_DETECTED
    assert s.wanted == ()


def test_operator_sources_and_episodes_keep_their_rules() -> None:
    op = cand(source_kind=SourceKind.ADMIN_POLICY)
    assert gate.screening(op, AGENT, policy(), (), scored(op, injection=0.65)).wanted == ()
    # an episode's injection floor is 0.95: 0.65 is far below it, not borderline
    ep = cand("I went to the climbing gym with Sam", type=FactType.EPISODIC)
    assert gate.screening(ep, AGENT, policy(), (), scored(ep, injection=0.65)).wanted == ()
    assert gate.screening(ep, AGENT, policy(), (), scored(ep, injection=0.85)).wanted == (
        "injection",
    )


def test_an_extracted_episode_gets_no_floor() -> None:
    """The extractor's episodes read "The user …": an instruction riding on an event is
    refused at the tenant's threshold, not at the narration floor."""
    ep = cand("The user got verified last week", type=FactType.EPISODIC, origin=Origin.EXTRACTED)
    result = gate.screen(ep, AGENT, policy(enabled=False), (), scored(ep, injection=0.85))
    assert result is not None and result.reason is Reason.PROMPT_INJECTION


def test_a_write_held_for_consent_is_not_sent_to_the_judge() -> None:
    c = cand("I have been seeing a therapist every week")  # sensitive: health
    asks = effective_policy(
        DEFAULTS,
        {"gate": {"judge": {"enabled": True}}, "sensitive": {"ask_user": True}},
        strict=True,
    )
    s = gate.screening(c, AGENT, asks, (), scored(c, injection=0.62))
    assert s.result is not None and s.result.decision is Decision.PENDING
    assert s.wanted == ()


@pytest.mark.parametrize(
    "override",
    [{"margin": -0.1}, {"margin": 0.9}, {"timeout_s": 0}, {"timeout_s": 30}, {"model": "x"}],
)
def test_bad_judge_settings_are_refused(override: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        effective_policy(DEFAULTS, {"gate": {"judge": override}}, strict=True)
