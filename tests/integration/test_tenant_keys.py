"""Every primary key and unique constraint of a tenant table includes tenant_id, and every
foreign key joins rows of one tenant (migrations/0011, docs/scaling.md#where-the-tables-live).

Catalog checks through the owner's pool: no API, no socket. They hold on a single node and
on Citus alike (the keys are the same on both), so a table added later without tenant_id
in its keys fails here before it fails to distribute.
"""

from __future__ import annotations

import asyncpg

from app.store.migrate import REFERENCE_TABLES


async def test_tenant_id_is_in_every_key_of_a_tenant_table(owner_db: asyncpg.Pool) -> None:
    async with owner_db.acquire() as conn:
        rows = await conn.fetch(
            """SELECT c.relname AS table_name, i.relname AS index_name,
                      array_agg(a.attname::text) AS columns
               FROM pg_index x
               JOIN pg_class c ON c.oid = x.indrelid
               JOIN pg_class i ON i.oid = x.indexrelid
               JOIN pg_namespace n ON n.oid = c.relnamespace
               JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = ANY(x.indkey)
               WHERE n.nspname = current_schema() AND x.indisunique
                 AND EXISTS (SELECT 1 FROM pg_attribute t WHERE t.attrelid = c.oid
                             AND t.attname = 'tenant_id' AND NOT t.attisdropped)
               GROUP BY 1, 2"""
        )
    assert {r["table_name"] for r in rows} >= {"facts", "candidates", "jobs", "fact_hits"}
    missing = [
        (r["table_name"], r["index_name"])
        for r in rows
        if "tenant_id" not in r["columns"] and r["table_name"] not in REFERENCE_TABLES
    ]
    assert missing == []


async def test_foreign_keys_join_rows_of_one_tenant(owner_db: asyncpg.Pool) -> None:
    async with owner_db.acquire() as conn:
        rows = await conn.fetch(
            # through pg_class: Citus hides its shards there (a reference table has one on
            # the coordinator, with its own copy of the foreign key)
            """SELECT ch.relname AS child, pa.relname AS parent,
                      (SELECT array_agg(a.attname::text) FROM pg_attribute a
                       WHERE a.attrelid = c.conrelid AND a.attnum = ANY(c.conkey)) AS columns
               FROM pg_constraint c
               JOIN pg_class ch ON ch.oid = c.conrelid
               JOIN pg_class pa ON pa.oid = c.confrelid
               WHERE c.contype = 'f' AND ch.relnamespace = current_schema()::regnamespace"""
        )
    assert rows
    for r in rows:
        # to the tenants table by tenant_id, or to a colocated table on (tenant_id, ...)
        assert "tenant_id" in r["columns"], r
        assert r["parent"] == "tenants" or r["parent"] not in REFERENCE_TABLES, r
