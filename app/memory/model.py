"""The vocabulary of memgate: fact types, sources, decisions and reasons
(docs/data-model.md#the-fact, docs/gate.md#decisions).

Plain data only. Every pure decision module (gate, conflicts, scoring, packing) speaks
in these types; the store and the API translate rows and requests into them.
"""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


class FactType(enum.StrEnum):
    PROFILE = "profile"
    SEMANTIC = "semantic"
    EPISODIC = "episodic"
    PROCEDURAL = "procedural"


class SourceKind(enum.StrEnum):
    ADMIN_POLICY = "admin_policy"
    SYSTEM = "system"
    EXPLICIT_INSTRUCTION = "explicit_instruction"
    DOCUMENT = "document"
    USER_MESSAGE = "user_message"
    TOOL_OBSERVATION = "tool_observation"
    AGENT_INFERENCE = "agent_inference"
    EXTERNAL_CONTENT = "external_content"
    # brought from another memory store (POST /v1/admin/import, `app.cli import-mem0`):
    # what an earlier system inferred, not what the user says now
    IMPORTED = "imported"


# docs/data-model.md#source-kinds-and-authority: admin_policy > system > explicit_instruction >
# document > user_message = tool_observation > agent_inference = imported > external_content.
AUTHORITY: dict[SourceKind, int] = {
    SourceKind.ADMIN_POLICY: 7,
    SourceKind.SYSTEM: 6,
    SourceKind.EXPLICIT_INSTRUCTION: 5,
    SourceKind.DOCUMENT: 4,
    SourceKind.USER_MESSAGE: 3,
    SourceKind.TOOL_OBSERVATION: 3,
    SourceKind.AGENT_INFERENCE: 2,
    SourceKind.IMPORTED: 2,
    SourceKind.EXTERNAL_CONTENT: 1,
}


def authority(kind: SourceKind | str) -> int:
    return AUTHORITY[SourceKind(kind)]


class Sensitivity(enum.StrEnum):
    NORMAL = "normal"
    PERSONAL = "personal"
    CONFIDENTIAL = "confidential"
    RESTRICTED = "restricted"


SENSITIVITY_RANK: dict[Sensitivity, int] = {
    Sensitivity.NORMAL: 0,
    Sensitivity.PERSONAL: 1,
    Sensitivity.CONFIDENTIAL: 2,
    Sensitivity.RESTRICTED: 3,
}


def sensitivity_allowed(level: Sensitivity | str, ceiling: Sensitivity | str) -> bool:
    return SENSITIVITY_RANK[Sensitivity(level)] <= SENSITIVITY_RANK[Sensitivity(ceiling)]


class Status(enum.StrEnum):
    ACTIVE = "active"
    SUPERSEDED = "superseded"
    ARCHIVED = "archived"
    DELETED = "deleted"


class Decision(enum.StrEnum):
    WRITTEN = "written"
    MERGED = "merged"
    SUPERSEDED = "superseded"
    PENDING = "pending"
    REJECTED = "rejected"


class Reason(enum.StrEnum):
    """Rejection reasons. Declaration order is the gate order (docs/gate.md#gate-order)."""

    SCOPE_FORBIDDEN = "scope_forbidden"
    PROCEDURAL_REQUIRES_ADMIN = "procedural_requires_admin"
    SECRET_DETECTED = "secret_detected"
    GOVERNMENT_ID = "government_id"
    PAYMENT_CARD = "payment_card"
    PROMPT_INJECTION = "prompt_injection"
    EXTERNAL_SOURCE = "external_source"
    MISSING_SOURCE = "missing_source"
    THIRD_PARTY_PII = "third_party_pii"
    SENSITIVE_NEEDS_CONSENT = "sensitive_needs_consent"
    NOT_REUSABLE = "not_reusable"
    TOMBSTONED = "tombstoned"
    LOWER_AUTHORITY = "lower_authority"


GATE_ORDER: tuple[Reason, ...] = tuple(Reason)


class Role(enum.StrEnum):
    AGENT = "agent"
    OPS = "ops"
    ADMIN = "admin"
    USER = "user"  # a user token: only /v1/me


ROLE_RANK: dict[Role, int] = {Role.USER: 0, Role.AGENT: 1, Role.OPS: 2, Role.ADMIN: 3}


class Origin(enum.StrEnum):
    """How a candidate reached the gate."""

    EXPLICIT = "explicit"  # POST /facts: an agent relays a write
    CORRECTION = "correction"  # PATCH /facts/{id}, PATCH /me/facts/{id}
    EXTRACTED = "extracted"  # the extractor read it in a conversation turn
    PROMOTED = "promoted"  # a candidate that met the promotion rule or was confirmed
    IMPORTED = "imported"  # POST /v1/admin/import, `app.cli import-mem0`: another store's


@dataclass(frozen=True)
class KeyRights:
    """What the calling key may do (docs/isolation.md#keys-and-roles)."""

    key_id: uuid.UUID | None
    role: Role
    allowed_scopes: tuple[str, ...] | None = None  # None = every scope
    max_sensitivity: Sensitivity = Sensitivity.PERSONAL
    user_id: str | None = None  # set for user tokens

    def may_write_scope(self, scope: str) -> bool:
        return self.allowed_scopes is None or scope == "global" or scope in self.allowed_scopes

    @property
    def is_admin(self) -> bool:
        return self.role is Role.ADMIN


@dataclass
class Candidate:
    """A proposed memory, before the gate decides (docs/data-model.md#the-fact fields the writer
    controls)."""

    user_id: str
    type: FactType
    statement: str
    value: Any = None
    predicate: str | None = None
    scope: str = "global"
    source_kind: SourceKind | None = None  # None: no source given (missing_source)
    trace_id: str | None = None
    turn_id: str | None = None
    evidence: str | None = None
    confidence: float | None = None
    sensitivity: Sensitivity | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    ttl_days: int | None = None
    consent: bool = False
    origin: Origin = Origin.EXPLICIT
    occurred_at: datetime | None = None  # when the event happened (episodes)
    keys: tuple[str, ...] = ()  # extra text to find the fact by; indexed, never injected
    # the other sentences of the user turn an extracted candidate comes from: read by the
    # gate for orders (docs/gate.md "Round 14"), never stored
    context: tuple[str, ...] = ()
    # an extracted statement said in passing, with no mark of a preference or an
    # instruction ("I teach high school physics"): the gate reads it at the strict
    # thresholds (docs/gate.md#tentative-candidates); never stored
    tentative: bool = False


@dataclass(frozen=True)
class ExistingFact:
    """An active (or recently superseded) fact the candidate may conflict or merge with.

    `similarity` is the cosine similarity of its embedding to the candidate's, computed by
    the store for free statements (None when unknown or of another embedding model).
    """

    id: uuid.UUID
    scope: str
    type: FactType
    predicate: str | None
    value: Any
    statement: str
    source_kind: SourceKind
    confidence: float
    valid_from: datetime
    status: Status = Status.ACTIVE
    contested: bool = False
    similarity: float | None = None


@dataclass(frozen=True)
class FactUpdate:
    """A change the gate asks the store to make to an existing fact."""

    fact_id: uuid.UUID
    status: Status | None = None  # e.g. superseded
    valid_to: datetime | None = None
    confidence: float | None = None
    contested: bool | None = None
    observations_delta: int = 0


@dataclass
class GateResult:
    """The gate's verdict and the exact effects to apply, in one transaction."""

    decision: Decision
    reason: Reason | None = None
    # for written/superseded: how to store the new fact
    status: Status = Status.ACTIVE
    valid_to: datetime | None = None  # set when written as history (status superseded)
    sensitivity: Sensitivity = Sensitivity.NORMAL
    confidence: float = 0.7
    contested: bool = False
    supersedes: uuid.UUID | None = None  # the previous version in the chain
    merged_into: uuid.UUID | None = None  # for merged
    updates: list[FactUpdate] = field(default_factory=list)
    redacted_statement: str | None = None  # what audit may keep when content was refused
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def superseded_ids(self) -> list[uuid.UUID]:
        return [u.fact_id for u in self.updates if u.status is Status.SUPERSEDED]
