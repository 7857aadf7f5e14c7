"""The candidate pool (table candidates): what memgate may learn, before it is a fact.

A candidate is identified by a match key (normalized predicate+value, or statement) per
user+scope; seeing it again in another turn counts one more observation
(docs/extraction.md#the-candidate-pool). A
repeat in other words has another key: a pending candidate keeps its statement's
embedding, and `paraphrases` finds the candidates a new one may repeat
(`promote.paraphrase_similarity`; the writer decides with app.memory.dedupe).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta

import asyncpg

from app.memory.model import Candidate, Reason, Sensitivity
from app.memory.normalize import statement_key, value_key
from app.memory.policy import Policy

CANDIDATE_COLUMNS = """id, tenant_id, user_id, scope, type, predicate, value, statement, match_key,
    source_kind, evidence, trace_id, confidence, sensitivity, reason, observations, turn_keys,
    status, fact_id, policy_version, expires_at, created_at, updated_at, occurred_at, keys"""


def match_key(c: Candidate) -> str:
    if c.predicate:
        return f"{c.type.value}|{value_key(c.predicate, c.value)}"
    return f"{c.type.value}|{statement_key(c.statement)}"


async def upsert_pending(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    c: Candidate,
    policy: Policy,
    now: datetime,
    *,
    reason: Reason | None = None,
    sensitivity: Sensitivity | None = None,
    turn_key: str | None = None,
    embedding: list[float] | None = None,
    embedding_model: str | None = None,
) -> asyncpg.Record:
    """Add the candidate or count one more distinct turn for it; returns the row.

    A turn already counted (same turn key: a retried job, a duplicate post) adds nothing.
    A new candidate keeps `embedding` (its statement's, from `embedding_model`).
    """
    keys = [turn_key] if turn_key else []
    row = await conn.fetchrow(
        f"""INSERT INTO candidates (id, tenant_id, user_id, scope, type, predicate, value,
                statement, match_key, source_kind, evidence, trace_id, confidence, sensitivity,
                reason, observations, turn_keys, policy_version, expires_at, created_at,
                updated_at, occurred_at, keys, embedding, embedding_model)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15,
                    1, $16::text[], $17, $18, $19, $19, $20, $21, $22, $23)
            ON CONFLICT (tenant_id, user_id, scope, match_key) WHERE status = 'pending'
            DO UPDATE SET
                observations = candidates.observations
                    + CASE WHEN cardinality($16::text[]) = 0
                             OR NOT ($16::text[] <@ candidates.turn_keys) THEN 1 ELSE 0 END,
                turn_keys = CASE WHEN $16::text[] <@ candidates.turn_keys
                                 THEN candidates.turn_keys
                                 ELSE candidates.turn_keys || $16::text[] END,
                confidence = GREATEST(candidates.confidence, EXCLUDED.confidence),
                updated_at = EXCLUDED.updated_at,
                embedding = coalesce(candidates.embedding, EXCLUDED.embedding),
                embedding_model = CASE WHEN candidates.embedding IS NULL
                                       THEN EXCLUDED.embedding_model
                                       ELSE candidates.embedding_model END
            RETURNING {CANDIDATE_COLUMNS}""",
        uuid.uuid4(),
        tenant_id,
        c.user_id,
        c.scope,
        c.type.value,
        c.predicate,
        c.value,
        c.statement,
        match_key(c),
        (c.source_kind.value if c.source_kind else "user_message"),
        c.evidence,
        c.trace_id,
        c.confidence if c.confidence is not None else 0.6,
        (sensitivity or c.sensitivity or Sensitivity.NORMAL).value,
        reason.value if reason else None,
        keys,
        policy.version,
        now + timedelta(days=policy.promote.ttl_days),
        now,
        c.occurred_at,
        list(c.keys) or None,
        embedding if embedding_model else None,
        embedding_model if embedding else None,
    )
    assert row is not None
    return row


async def pending_by_key(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, c: Candidate
) -> asyncpg.Record | None:
    """The pending candidate with the same match key (the same words), if any."""
    return await conn.fetchrow(
        f"""SELECT {CANDIDATE_COLUMNS} FROM candidates
            WHERE tenant_id = $1 AND user_id = $2 AND scope = $3 AND match_key = $4
              AND status = 'pending'""",
        tenant_id,
        c.user_id,
        c.scope,
        match_key(c),
    )


async def paraphrases(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    c: Candidate,
    embedding: list[float],
    embedding_model: str,
    min_similarity: float,
    limit: int = 5,
) -> list[tuple[asyncpg.Record, float]]:
    """Pending candidates this one may repeat in other words, most similar first.

    Same user, scope, type and predicate (both free statements, or the same predicate),
    a vector of the same model, cosine similarity >= `min_similarity`. Candidates waiting
    for consent (`reason` set) keep no vector and are matched by their key only.
    """
    rows = await conn.fetch(
        f"""SELECT {CANDIDATE_COLUMNS}, 1 - (embedding <=> $6::vector) AS similarity
            FROM candidates
            WHERE tenant_id = $1 AND user_id = $2 AND scope = $3 AND type = $4
              AND predicate IS NOT DISTINCT FROM $5 AND status = 'pending'
              AND reason IS NULL AND match_key <> $7
              AND embedding IS NOT NULL AND embedding_model = $8
              AND vector_dims(embedding) = vector_dims($6::vector)
              AND 1 - (embedding <=> $6::vector) >= $9
            ORDER BY embedding <=> $6::vector, created_at, id
            LIMIT $10""",
        tenant_id,
        c.user_id,
        c.scope,
        c.type.value,
        c.predicate,
        embedding,
        match_key(c),
        embedding_model,
        min_similarity,
        limit,
    )
    return [(row, float(row["similarity"])) for row in rows]


async def count_turn(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    candidate_id: uuid.UUID,
    turn_key: str | None,
    confidence: float | None,
    now: datetime,
) -> asyncpg.Record:
    """One more distinct turn for an existing candidate (a paraphrase of it): the same
    exactly-once rule as `upsert_pending` (a turn key already counted adds nothing)."""
    keys = [turn_key] if turn_key else []
    row = await conn.fetchrow(
        f"""UPDATE candidates SET
                observations = observations
                    + CASE WHEN cardinality($3::text[]) = 0
                             OR NOT ($3::text[] <@ turn_keys) THEN 1 ELSE 0 END,
                turn_keys = CASE WHEN $3::text[] <@ turn_keys THEN turn_keys
                                 ELSE turn_keys || $3::text[] END,
                confidence = GREATEST(confidence, coalesce($4::real, confidence)),
                updated_at = $5
            WHERE tenant_id = $1 AND id = $2
            RETURNING {CANDIDATE_COLUMNS}""",
        tenant_id,
        candidate_id,
        keys,
        confidence,
        now,
    )
    assert row is not None
    return row


async def vectors_by_key(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, cs: Sequence[Candidate]
) -> list[tuple[list[float] | None, str | None] | None]:
    """For each candidate, the stored vector of the pending candidate with its match key
    (a repeat in the same words), as `embedding_of` gives it, or None when there is no
    such candidate: one statement for many (a batch of observe jobs, before its
    transaction)."""
    if not cs:
        return []
    keys = [(c.user_id, c.scope, match_key(c)) for c in cs]
    rows = await conn.fetch(
        """SELECT k.i, c.embedding, c.embedding_model
           FROM unnest($2::text[], $3::text[], $4::text[]) WITH ORDINALITY
                AS k(user_id, scope, match_key, i)
           JOIN candidates c ON c.tenant_id = $1 AND c.user_id = k.user_id
                AND c.scope = k.scope AND c.match_key = k.match_key AND c.status = 'pending'""",
        tenant_id,
        [k[0] for k in keys],
        [k[1] for k in keys],
        [k[2] for k in keys],
    )
    out: list[tuple[list[float] | None, str | None] | None] = [None] * len(cs)
    for r in rows:
        out[r["i"] - 1] = _stored_vector(r)
    return out


def _stored_vector(row: asyncpg.Record | None) -> tuple[list[float] | None, str | None]:
    """A row's `embedding` and `embedding_model` as floats and a name, or (None, None)."""
    if row is None or row["embedding"] is None or not row["embedding_model"]:
        return None, None
    vector = row["embedding"]
    values = vector.to_list() if hasattr(vector, "to_list") else list(vector)
    return [float(x) for x in values], str(row["embedding_model"])


async def embedding_of(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, candidate_id: uuid.UUID
) -> tuple[list[float] | None, str | None]:
    """The stored vector of a candidate's statement and its model, or (None, None)."""
    row = await conn.fetchrow(
        "SELECT embedding, embedding_model FROM candidates WHERE tenant_id = $1 AND id = $2",
        tenant_id,
        candidate_id,
    )
    return _stored_vector(row)


async def get(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, user_id: str, candidate_id: uuid.UUID
) -> asyncpg.Record | None:
    return await conn.fetchrow(
        f"""SELECT {CANDIDATE_COLUMNS} FROM candidates
            WHERE tenant_id = $1 AND user_id = $2 AND id = $3 AND status <> 'deleted'""",
        tenant_id,
        user_id,
        candidate_id,
    )


async def lock(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, candidate_id: uuid.UUID
) -> asyncpg.Record | None:
    return await conn.fetchrow(
        f"""SELECT {CANDIDATE_COLUMNS} FROM candidates
            WHERE tenant_id = $1 AND id = $2 FOR UPDATE""",
        tenant_id,
        candidate_id,
    )


async def set_status(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    candidate_id: uuid.UUID,
    status: str,
    now: datetime,
    fact_id: uuid.UUID | None = None,
) -> None:
    await conn.execute(
        """UPDATE candidates SET status = $3, fact_id = coalesce($4, fact_id), updated_at = $5,
               embedding = CASE WHEN $3 = 'pending' THEN embedding END,
               embedding_model = CASE WHEN $3 = 'pending' THEN embedding_model END
           WHERE tenant_id = $1 AND id = $2""",
        tenant_id,
        candidate_id,
        status,
        fact_id,
        now,
    )


async def list_for_user(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    user_id: str,
    status: str | None,
    after: tuple[datetime, uuid.UUID] | None,
    limit: int,
    *,
    scopes: list[str] | None = None,
    sensitivities: list[str] | None = None,
) -> list[asyncpg.Record]:
    """A page of the user's candidates within these scopes and sensitivities (None: all)."""
    return list(
        await conn.fetch(
            f"""SELECT {CANDIDATE_COLUMNS} FROM candidates
                WHERE tenant_id = $1 AND user_id = $2 AND status <> 'deleted'
                  AND ($3::text IS NULL OR status = $3)
                  AND ($4::timestamptz IS NULL OR (created_at, id) < ($4, $5::uuid))
                  AND ($7::text[] IS NULL OR scope = ANY($7))
                  AND ($8::text[] IS NULL OR sensitivity = ANY($8))
                ORDER BY created_at DESC, id DESC LIMIT $6""",
            tenant_id,
            user_id,
            status,
            after[0] if after else None,
            after[1] if after else None,
            limit,
            scopes,
            sensitivities,
        )
    )


def to_candidate(row: asyncpg.Record) -> Candidate:
    from app.memory.model import FactType, Origin, SourceKind

    return Candidate(
        user_id=row["user_id"],
        type=FactType(row["type"]),
        statement=row["statement"],
        value=row["value"],
        predicate=row["predicate"],
        scope=row["scope"],
        source_kind=SourceKind(row["source_kind"]),
        trace_id=row["trace_id"],
        evidence=row["evidence"],
        confidence=float(row["confidence"]),
        sensitivity=Sensitivity(row["sensitivity"]),
        origin=Origin.PROMOTED,
        occurred_at=row["occurred_at"],
        keys=tuple(row["keys"] or ()),
    )
