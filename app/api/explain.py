"""`POST /v1/admin/gate/explain`: what the write gate would decide, and why, writing nothing.

Admin only. The body is either one write (the body of `POST /v1/users/{u}/facts`) or a
list of turns (as for `POST .../observations`, run through the configured extractor).
Every candidate is screened exactly as a write would be — rules and semantic classes, as
the admin key — and the answer is the full screening trace: decision, reason, the
detail of the refusal (detector, field, score, threshold), the highest semantic score per
class, and which rule detectors fire on which field. Statements come back redacted; no
fact, candidate, audit row or job is written. Tombstones are not consulted (they belong
to one user's history); conflicts with existing facts are not resolved.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from app.api.deps import admin, get_ctx
from app.api.facts import candidate_from, check_sizes
from app.api.observations import MAX_CONTENT_BYTES
from app.api.schemas.common import KEYED, WRITE
from app.api.schemas.explain import Explained, ExplainIn
from app.auth import Principal
from app.errors import PayloadTooLarge
from app.memory import detectors, gate
from app.memory.model import Candidate
from app.providers import durable
from app.providers.extractor import Turn, assign_turn_ids, extractor_from_settings
from app.services.policies import tenant_policy
from app.writer import embed_candidate

router = APIRouter(prefix="/v1/admin/gate", tags=["admin"], responses=KEYED)

# The rule detectors an explanation lists per field (names only, never the matched text).
_RULES = (
    ("secret", detectors.find_secrets),
    ("government_id", detectors.find_ids),
    ("payment_card", detectors.find_cards),
    ("prompt_injection", detectors.find_injection),
    ("third_party_pii", detectors.find_third_party_pii),
    ("sensitive", detectors.find_sensitive),
)


def rule_findings(candidate: Candidate) -> dict[str, list[str]]:
    """Per field, the rule detectors that fire on it (detector names only)."""
    out: dict[str, list[str]] = {}
    for field, text in gate.candidate_fields(candidate):
        names = sorted({f.detail for _, finder in _RULES for f in finder(text)})
        if names:
            out[field] = names
    return out


def _check_size(body: ExplainIn) -> None:
    """The size limits of the write and observation routes, answered 413 as there."""
    if body.fact is not None:
        check_sizes(body.fact.statement, body.fact.value, True)
    if body.messages is not None:
        size = sum(len(m.content.encode()) for m in body.messages)
        if size > MAX_CONTENT_BYTES or any(
            len(m.content) > MAX_CONTENT_BYTES for m in body.messages
        ):
            raise PayloadTooLarge(
                f"message contents over {MAX_CONTENT_BYTES} bytes", {"max_bytes": MAX_CONTENT_BYTES}
            )


@router.post("/explain", response_model=Explained, responses=WRITE)
async def explain_gate(request: Request, body: ExplainIn, who: Principal = admin) -> dict[str, Any]:
    """The screening trace of a write or of a conversation's candidates; writes nothing."""
    _check_size(body)
    ctx = get_ctx(request)
    policy = await tenant_policy(ctx, who.tenant_id)
    if body.fact is not None:
        candidates = [candidate_from(body.fact, body.user_id)]
    else:
        assert body.messages is not None
        turns = assign_turn_ids(
            [Turn(role=m.role, content=m.content, turn_id=m.turn_id) for m in body.messages],
            request_key="explain",
        )
        candidates = await durable.extract(
            extractor_from_settings(ctx.settings),
            turns,
            ctx.embedder,
            policy,
            user_id=body.user_id,
        )
    explained = []
    for c in candidates:
        embedded = await embed_candidate(ctx, c, policy)
        screened = gate.screening(c, who.rights, policy, (), embedded.assessment)
        result = screened.result
        explained.append(
            {
                "statement": detectors.redact_statement(c.statement, c.predicate),
                "type": c.type.value,
                "predicate": c.predicate,
                "source_kind": c.source_kind.value if c.source_kind else None,
                "turn_id": c.turn_id,
                "decision": result.decision.value if result is not None else "pass",
                "reason": result.reason.value if result is not None and result.reason else None,
                "detail": dict(result.detail) if result is not None else {},
                "semantic": gate.semantic_state(policy, embedded.assessment),
                "semantic_scores": embedded.assessment.summary(),
                "rules": rule_findings(c),
                "judge_asks": list(screened.wanted),
            }
        )
    return {"policy_version": policy.version, "candidates": explained, "written": 0}
