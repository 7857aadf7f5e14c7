"""The memory policy as typed data (docs/architecture.md#configuration-and-policy), and its
per-tenant overrides.

Pure: loading the YAML file and reading tenant overrides happen in `app.config`
and the store; this module only validates, merges and versions.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ExtractPolicy(_Section):
    mode: Literal["off", "candidate", "direct"] = "candidate"
    require_source: bool = True
    max_candidates_per_turn: int = Field(3, ge=0, le=20)
    # Durable statements read by meaning in the turns the rules found nothing in
    # (app.providers.durable): the classifier's score a clause needs; 1 turns it off.
    durable: float = Field(0.9, ge=0.5, le=1)


class PromotePolicy(_Section):
    min_observations: int = Field(2, ge=1)
    require_confirmation: bool = False
    ttl_days: int = Field(30, ge=1)
    # A candidate said again in other words counts toward the earlier one when their
    # statements' embeddings are at least this similar (cosine) and carry the same
    # information (app.memory.dedupe): same user, scope, type and predicate. 1 turns it off.
    paraphrase_similarity: float = Field(0.85, ge=0.5, le=1)


class RetentionPolicy(_Section):
    max_items_per_subject: int = Field(200, ge=1)
    ttl_default_days: int | None = Field(180, ge=1)
    ttl_override: dict[str, int | Literal["never"]] = Field(default_factory=dict)


class DecayPolicy(_Section):
    enabled: bool = True
    half_life_days: float = Field(90, gt=0)
    keep_floor: float = Field(0.3, ge=0, le=1)


class RecallPolicy(_Section):
    k: int = Field(8, ge=1, le=50)
    budget_tokens: int = Field(400, ge=1, le=4000)
    min_score: float = Field(0.25, ge=0, le=1)
    fresh_days: float = Field(7, ge=0)
    stale_days: float = Field(30, ge=0)
    low_confidence: float = Field(0.6, ge=0, le=1)
    new_tier_min_confidence: float = Field(0.9, ge=0, le=1)
    dedupe_similarity: float = Field(0.92, ge=0, le=1)


class SensitivePolicy(_Section):
    ask_user: bool = False
    categories: list[str] = Field(
        default_factory=lambda: ["health", "finance", "religion", "sexuality", "politics"]
    )


class PredicateRule(_Section):
    cardinality: Literal["one", "many"] = "one"
    category: str | None = None
    # e.g. preference / employment / constraint: a key for ttl_override
    class_: str | None = Field(None, alias="class")


class SessionPolicy(_Section):
    idle_minutes: float = Field(30, gt=0)
    max_turns: int = Field(50, ge=1, le=1000)
    retain_hours: float = Field(24, ge=0)


class SemanticGatePolicy(_Section):
    """The semantic detectors' thresholds (app/memory/semantic.py): a class refuses a write
    when its score (0..1) reaches its threshold; 1 switches a class off in practice, and
    `enabled: false` switches all of them off (the rules still run)."""

    enabled: bool = True
    injection: float = Field(0.65, ge=0, le=1)
    authority: float = Field(0.8, ge=0, le=1)
    transient: float = Field(0.85, ge=0, le=1)
    personal: float = Field(0.85, ge=0, le=1)

    def threshold(self, head: str) -> float:
        value: float = getattr(self, head)
        return value


class JudgeGatePolicy(_Section):
    """The optional LLM judge (app/providers/judge.py): asked only about a semantic class
    whose score falls short of its threshold by less than `margin`; its "harmful" refuses
    as the class would, "benign" lets the write go on. It needs the OpenAI-compatible LLM
    settings (MEMGATE_LLM_BASE_URL); without them it is off whatever this says. A judge
    that does not answer within `timeout_s`, or answers out of schema, holds the write as
    `pending` for the user: never `written`."""

    enabled: bool = False
    margin: float = Field(0.15, ge=0, le=0.5)
    timeout_s: float = Field(3.0, gt=0, le=10)  # the write waits, holding its transaction


class GatePolicy(_Section):
    semantic: SemanticGatePolicy = Field(default_factory=SemanticGatePolicy)
    judge: JudgeGatePolicy = Field(default_factory=JudgeGatePolicy)


class ImportPolicy(_Section):
    """Memories brought from another store (docs/api.md#bulk-import): the confidence a
    fact gets when the item names none (its trust is its source kind, `imported`)."""

    confidence: float = Field(0.6, ge=0, le=1)


class Policy(_Section):
    version: str = "0"
    extract: ExtractPolicy = Field(default_factory=ExtractPolicy)
    promote: PromotePolicy = Field(default_factory=PromotePolicy)
    retention: RetentionPolicy = Field(default_factory=RetentionPolicy)
    decay: DecayPolicy = Field(default_factory=DecayPolicy)
    recall: RecallPolicy = Field(default_factory=RecallPolicy)
    sensitive: SensitivePolicy = Field(default_factory=SensitivePolicy)
    predicates: dict[str, PredicateRule] = Field(default_factory=dict)
    session: SessionPolicy = Field(default_factory=SessionPolicy)
    gate: GatePolicy = Field(default_factory=GatePolicy)
    imports: ImportPolicy = Field(default_factory=ImportPolicy)

    def is_many(self, predicate: str | None) -> bool:
        rule = self.predicates.get(predicate or "")
        return rule is not None and rule.cardinality == "many"

    def predicate_class(self, predicate: str | None) -> str | None:
        if not predicate:
            return None
        rule = self.predicates.get(predicate)
        if rule is not None and rule.class_:
            return rule.class_
        if predicate.startswith(("preferred_", "prefers_")):
            return "preference"
        return None

    def ttl_days(self, fact_type: str, predicate: str | None) -> int | None:
        """Days a fact lives, or None for never (predicate, then its class, then type)."""
        override = self.retention.ttl_override
        for key in (predicate, self.predicate_class(predicate), fact_type):
            if key and key in override:
                value = override[key]
                return None if value == "never" else int(value)
        return self.retention.ttl_default_days


def _inline(schema: Any, defs: dict[str, Any]) -> Any:
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str):
            return _inline(defs[ref.rsplit("/", 1)[-1]], defs)
        return {k: _inline(v, defs) for k, v in schema.items() if k not in ("$defs", "default")}
    if isinstance(schema, list):
        return [_inline(v, defs) for v in schema]
    return schema


def _partial(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _partial(v) for k, v in schema.items() if k != "required"}
    if isinstance(schema, list):
        return [_partial(v) for v in schema]
    return schema


def override_json_schema() -> dict[str, Any]:
    """The JSON schema of a tenant override: any part of the policy, every key optional
    (deep-merged over the file); `version` is accepted and ignored."""
    full = Policy.model_json_schema(by_alias=True)
    schema: dict[str, Any] = _partial(_inline(full, full.get("$defs", {})))
    schema["properties"]["version"] = {"type": "string", "description": "ignored"}
    return schema


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def _integral(value: Any) -> Any:
    """3.0 is the JSON integer 3 (a float field takes an int as well)."""
    if isinstance(value, dict):
        return {k: _integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integral(v) for v in value]
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        return int(value)
    return value


def effective_policy(
    defaults: dict[str, Any], override: dict[str, Any] | None, *, strict: bool = False
) -> Policy:
    """Defaults from the file, deep-merged with a tenant override, versioned by content.

    The version is the file's version plus a digest of the override, so every fact and
    audit event can say exactly which rules applied. `strict` (a new override from the
    API): JSON types exactly as the schema says, no "5" for 5 or true for 1.
    """
    merged = deep_merge(defaults, _integral(override) if strict else override or {})
    policy = Policy.model_validate(merged, strict=strict)
    if override:
        digest = hashlib.sha256(
            json.dumps(override, sort_keys=True, ensure_ascii=False).encode()
        ).hexdigest()[:8]
        policy = policy.model_copy(update={"version": f"{policy.version}+t{digest}"})
    return policy
