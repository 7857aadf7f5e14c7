"""Re-embedding (docs/api.md#endpoints `POST /ops/reembed`): the facts still to migrate (the
job's progress is app.store.jobs.save_progress).

A fact is migrated when its `embedding_model` is the target model. Batches are keyed by
id, so a fact whose text cannot be embedded is skipped once, never retried in a loop.
"""

from __future__ import annotations

import uuid

import asyncpg
from pgvector import Vector


async def count_pending(conn: asyncpg.Connection, tenant_id: uuid.UUID, model: str) -> int:
    """Facts with text that are not on `model` yet (deleted facts have no text to embed)."""
    return int(
        await conn.fetchval(
            """SELECT count(*) FROM facts
               WHERE tenant_id = $1 AND status <> 'deleted' AND statement <> ''
                 AND embedding_model IS DISTINCT FROM $2""",
            tenant_id,
            model,
        )
    )


async def next_batch(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, model: str, after: uuid.UUID | None, limit: int
) -> list[asyncpg.Record]:
    return list(
        await conn.fetch(
            """SELECT id, statement FROM facts
               WHERE tenant_id = $1 AND status <> 'deleted' AND statement <> ''
                 AND embedding_model IS DISTINCT FROM $2
                 AND ($3::uuid IS NULL OR id > $3)
               ORDER BY id LIMIT $4""",
            tenant_id,
            model,
            after,
            limit,
        )
    )


async def missing_vectors(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, after: uuid.UUID | None, limit: int
) -> list[asyncpg.Record]:
    """Active facts stored without a vector (the embedder failed at write time, app.writer
    `_embed`): the dense channel cannot see them until they get one."""
    return list(
        await conn.fetch(
            """SELECT id, statement FROM facts
               WHERE tenant_id = $1 AND status = 'active' AND statement <> ''
                 AND embedding IS NULL AND ($2::uuid IS NULL OR id > $2)
               ORDER BY id LIMIT $3""",
            tenant_id,
            after,
            limit,
        )
    )


async def apply_batch(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    model: str,
    ids: list[uuid.UUID],
    statements: list[str],
    vectors: list[list[float]],
) -> int:
    """Store the new vectors; returns how many facts changed.

    A fact deleted (its text erased) or already migrated by a concurrent writer since the
    batch was read keeps its state: the statement must still be the one embedded.
    """
    result: str = await conn.execute(
        """UPDATE facts f SET embedding = u.embedding, embedding_model = $2
           FROM unnest($3::uuid[], $4::text[], $5::vector[]) AS u(id, statement, embedding)
           WHERE f.tenant_id = $1 AND f.id = u.id AND f.status <> 'deleted'
             AND f.statement = u.statement AND f.embedding_model IS DISTINCT FROM $2""",
        tenant_id,
        model,
        ids,
        statements,
        # Vector objects, not lists: asyncpg would read nested lists as a 2-d array.
        [Vector(v) for v in vectors],
    )
    return int(result.split()[-1])
