"""A single write's reads in one round trip: the user's forget-me fence, the subject's
lock, the content's tombstones and the conflict pool (app.writer.write, when the
statement's vector is known before the screening: the default embedder's semantic
classes embed it first).

The same statements as `users.fence_user` then `facts.lock_conflict_pool`, in the same
order (the user's shared lock, then the subject's), in one plpgsql function: each
statement takes a new snapshot (read committed), so what is read after the locks is what
the writes that held them committed. Installed by the migration runner on every run and
named by a hash of its body, as the other routines (app/store/migrate.py); it stays on
the coordinator on Citus, where its advisory locks serialize writers, and its reads
bind the tenant (one shard group, docs/scaling.md).
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from datetime import datetime

import asyncpg

from app.memory.model import ExistingFact
from app.store import facts as facts_store
from app.store import users as users_store

_ARGS = """p_user_lock_key text, p_lock_key text, p_tenant uuid, p_user text,
    p_started timestamptz, p_scope text, p_type text, p_predicate text, p_statement_key text,
    p_embedding vector, p_model text, p_limit int, p_hashes text[]"""
_COLUMNS = f"forgotten boolean, {facts_store.LOCK_POOL_COLUMNS}"
_BODY = f"""
BEGIN
  PERFORM pg_advisory_xact_lock_shared(hashtextextended(p_user_lock_key, 0));
  PERFORM pg_advisory_xact_lock(hashtextextended(p_lock_key, 0));
  RETURN QUERY SELECT EXISTS (SELECT 1 FROM audit_events
                              WHERE tenant_id = p_tenant AND action = 'forget_me'
                                AND user_id = p_user AND created_at >= p_started),
    {facts_store.TOMBSTONED_IN_FUNCTION}, NULL::uuid, NULL::text, NULL::text,
    NULL::text, NULL::jsonb, NULL::text, NULL::text, NULL::real, NULL::timestamptz,
    NULL::text, NULL::boolean, NULL::float8;
  IF p_predicate IS NOT NULL THEN
    RETURN QUERY SELECT NULL::boolean, NULL::text[], pool.*
      FROM ({facts_store.POOL_BY_PREDICATE}) pool;
  ELSE
    RETURN QUERY SELECT NULL::boolean, NULL::text[], pool.* FROM ({facts_store.POOL_FREE}) pool;
  END IF;
END"""
WRITE_READ_FUNCTION = (
    "memgate_write_read_" + hashlib.sha256((_ARGS + _COLUMNS + _BODY).encode()).hexdigest()[:12]
)
WRITE_READ_FUNCTION_DDL = f"""
CREATE OR REPLACE FUNCTION {WRITE_READ_FUNCTION}({_ARGS})
RETURNS TABLE ({_COLUMNS})
LANGUAGE plpgsql VOLATILE AS $write_read$
#variable_conflict use_column
{_BODY}
$write_read$;
REVOKE ALL ON FUNCTION {WRITE_READ_FUNCTION}({_ARGS}) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION {WRITE_READ_FUNCTION}({_ARGS}) TO memgate_app;
"""


@dataclass
class WriteRead:
    """What a write reads before it decides: whether the user was forgotten since it
    began, the content's tombstones and the conflict pool."""

    forgotten: bool
    tombstoned: set[str]
    existing: list[ExistingFact]


async def fence_lock_pool(
    conn: asyncpg.Connection,
    tenant_id: uuid.UUID,
    user_id: str,
    started_at: datetime,
    scope: str,
    subject: str,
    fact_type: str,
    predicate: str | None,
    statement_key: str,
    embedding: list[float] | None,
    embedding_model: str | None,
    hashes: list[str],
    limit: int = 20,
) -> WriteRead:
    """`users.fence_user` then `facts.lock_conflict_pool`, in one round trip."""
    rows = await conn.fetch(
        f"""SELECT * FROM {WRITE_READ_FUNCTION}($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11,
                                                 $12, $13)""",
        users_store.user_lock_key(tenant_id, user_id),
        facts_store.subject_lock_key(tenant_id, user_id, scope, subject),
        tenant_id,
        user_id,
        started_at,
        scope,
        fact_type,
        predicate,
        statement_key,
        embedding,
        embedding_model,
        limit,
        hashes,
    )
    head = rows[0]
    return WriteRead(
        bool(head["forgotten"]),
        set(head["tombstoned"] or ()),
        [facts_store.pool_fact(r) for r in rows[1:]],
    )
