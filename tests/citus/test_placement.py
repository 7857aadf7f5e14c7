"""Where every table lives on the cluster, and recall as a router query (docs/scaling.md).

Runs against the session's Citus coordinator + 2 workers (tests/conftest.py `stack`), over
the ASGI transport for the API and the owner's pool for the catalog and EXPLAIN.
"""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg
import httpx
from pgvector.asyncpg import register_vector

from app.clock import now as clock_now
from app.store import db
from app.store.migrate import (
    COLOCATE_WITH,
    DISTRIBUTION_COLUMN,
    LOCAL_TABLES,
    REFERENCE_TABLES,
    table_placement,
)
from app.store.recall import RECALL_ARGS, RECALL_FUNCTION, RECALL_SQL, RecallQuery, recall_args
from tests.conftest import Stack, Tenant


async def test_every_table_is_distributed_by_tenant_a_reference_or_local_for_a_reason(
    owner_db: asyncpg.Pool,
) -> None:
    async with owner_db.acquire() as conn:
        placement = await table_placement(conn)
        colocation = dict(
            await conn.fetch(
                "SELECT table_name::text, colocation_id FROM citus_tables"
                " WHERE citus_table_type = 'distributed'"
            )
        )
    assert placement["facts"] == ("distributed", DISTRIBUTION_COLUMN)
    for name, (kind, column) in placement.items():
        if name in REFERENCE_TABLES:
            assert kind == "reference", name
        elif name in LOCAL_TABLES:
            assert kind == "local", name
        else:
            assert (kind, column) == ("distributed", DISTRIBUTION_COLUMN), name
            assert colocation[name] == colocation[COLOCATE_WITH], f"{name} not with facts"
    # the lists name real tables (a stale entry would hide a renamed one)
    assert set(REFERENCE_TABLES) | set(LOCAL_TABLES) <= set(placement)


async def test_foreign_keys_between_tenant_tables_survive_distribution(
    owner_db: asyncpg.Pool,
) -> None:
    """`distribute` drops a key a citus-local table holds on a table it distributes
    (webhook_deliveries -> webhook_endpoints) and adds it back once both are placed."""
    async with owner_db.acquire() as conn:
        keys = await conn.fetch(
            "SELECT conrelid::regclass::text AS child, confrelid::regclass::text AS parent"
            " FROM pg_constraint WHERE contype = 'f' AND conrelid = 'webhook_deliveries'::regclass"
        )
    assert {"webhook_endpoints", "tenants"} <= {k["parent"] for k in keys}


async def test_the_app_role_logs_in_on_every_worker(owner_db: asyncpg.Pool) -> None:
    async with owner_db.acquire() as conn:
        rows = await conn.fetch(
            "SELECT nodeport, success, result FROM run_command_on_workers("
            "$$SELECT rolcanlogin FROM pg_roles WHERE rolname = 'memgate_app'$$)"
        )
    assert len(rows) >= 2
    assert all(r["success"] and r["result"] == "t" for r in rows), rows


async def test_every_node_commits_synchronously(owner_db: asyncpg.Pool) -> None:
    """An online shard move catches up to the source's written WAL only: an asynchronous
    commit still in the WAL buffers would stay behind on the dropped placement
    (docs/scaling.md, "Adding a worker")."""
    async with owner_db.acquire() as conn:
        assert await conn.fetchval("SHOW synchronous_commit") == "on"
        rows = await conn.fetch(
            "SELECT nodeport, success, result FROM run_command_on_workers("
            "$$SHOW synchronous_commit$$)"
        )
    assert len(rows) >= 2
    assert all(r["success"] and r["result"] == "on" for r in rows), rows


async def _write(client: httpx.AsyncClient, t: Tenant, user: str, statement: str) -> str:
    r = await client.post(
        f"/v1/users/{user}/facts",
        json={"type": "semantic", "statement": statement, "source": {"kind": "user_message"}},
        headers=t.h(),
    )
    assert r.status_code == 201, r.text
    return str(r.json()["fact"]["id"])


def _query(tenant_id: uuid.UUID, user: str) -> RecallQuery:
    return RecallQuery(
        tenant_id=tenant_id,
        user_id=user,
        scopes=["global"],
        now=clock_now(),
        sensitivities=["normal"],
        types=None,
        predicates=[],
        terms=["coffee"],
        vector=None,
        embedding_model=None,
    )


def _plan(rows: list[Any]) -> str:
    return "\n".join(r[0] for r in rows)


async def test_recall_is_one_task_on_one_shard(
    client: httpx.AsyncClient, tenant: Tenant, owner_db: asyncpg.Pool
) -> None:
    await _write(client, tenant, "u-router", "I drink black coffee every morning")
    args = recall_args(_query(tenant.id, "u-router"))
    async with owner_db.acquire() as conn:
        await register_vector(conn)
        # the statement itself: Citus' router planner sends it whole to one shard group
        statement = _plan(await conn.fetch("EXPLAIN " + RECALL_SQL, *args))
        # the function the API calls: delegated to the worker of its tenant argument
        call = _plan(
            await conn.fetch(
                f"EXPLAIN SELECT * FROM {RECALL_FUNCTION}"
                "($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
                *args,
            )
        )
        delegated = await conn.fetchval(
            """SELECT distribution_argument_index FROM pg_dist_object
               WHERE classid = 'pg_proc'::regclass AND objid = $1::regprocedure""",
            f"{RECALL_FUNCTION}({RECALL_ARGS})",
        )
    assert "Custom Scan (Citus Adaptive)" in statement, statement
    assert "Task Count: 1" in statement, statement
    assert "Custom Scan (Citus Adaptive)" in call, call
    assert "Task Count: 1" in call, call
    assert delegated == 0
    # a statement that names no tenant is not a router query: the test can tell them apart
    async with owner_db.acquire() as conn:
        fanout = _plan(await conn.fetch("EXPLAIN SELECT count(*) FROM facts"))
    assert "Task Count: 1\n" not in fanout + "\n" and "Task Count:" in fanout, fanout


async def test_rls_holds_on_the_workers(
    client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant, stack: Stack
) -> None:
    mine = await _write(client, tenant, "u-rls", "my shard row")
    theirs = await _write(client, other_tenant, "u-rls", "their shard row")
    pool = await db.create_pool(stack.database_url, min_size=1, max_size=2)
    try:
        async with db.tenant_tx(pool, tenant.id) as conn:
            seen = {str(r["id"]) for r in await conn.fetch("SELECT id FROM facts")}
            # naming the other tenant's shard explicitly: RLS on that worker still says no
            foreign = await conn.fetch("SELECT id FROM facts WHERE tenant_id = $1", other_tenant.id)
        async with db.system_conn(pool) as conn:
            untenanted = await conn.fetchval("SELECT count(*) FROM facts")
    finally:
        await pool.close()
    assert mine in seen and theirs not in seen
    assert foreign == []
    assert untenanted == 0
