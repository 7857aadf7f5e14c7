"""Apply migrations/NNNN_*.sql in order, once each, under an advisory lock.

Safe to run twice and from two processes at once: the lock serializes runners and the
`schema_migrations` table records what is applied. Runs as the connecting (owner) role.
Then (re)installs the SQL functions the repositories define (see app/store/recall.py).

One set of files serves a single PostgreSQL and a Citus coordinator: when the database has
the `citus` extension, `distribute` runs after the migrations (docs/scaling.md). It finds
the tenant tables in the catalog (every table with a `tenant_id` column), distributes each
by tenant_id colocated with `facts`, makes REFERENCE_TABLES reference tables, and refuses a
table that is neither unless LOCAL_TABLES says why it stays on the coordinator. So a table
a later migration adds is distributed too, on the next run.
"""

from __future__ import annotations

import asyncio
import logging
import re
import sys
from pathlib import Path

import asyncpg

from app.config import ROOT
from app.store.facts import LOCK_POOL_FUNCTION, LOCK_POOL_FUNCTION_DDL
from app.store.recall import RECALL_ARGS, RECALL_FUNCTION, RECALL_FUNCTION_DDL
from app.store.users import FENCE_FUNCTION, FENCE_FUNCTION_DDL

log = logging.getLogger("memgate.migrate")
MIGRATIONS_DIR = ROOT / "migrations"
_LOCK_KEY = 0x6D656D67617465  # "memgate"
ROUTINES = (
    RECALL_FUNCTION_DDL,
    LOCK_POOL_FUNCTION_DDL,
    FENCE_FUNCTION_DDL,
)
HASHED_PREFIXES = (
    "memgate_recall_",
    "memgate_lock_pool_",
    "memgate_fence_",
    "memgate_write_read_",
)
_NAME = re.compile(r"^(\d{4})_[\w-]+\.sql$")

# Citus: one tenant's rows of every table live on one shard group (colocated with facts),
# so a tenant's statements, recall included, run on one worker.
DISTRIBUTION_COLUMN = "tenant_id"
COLOCATE_WITH = "facts"
REFERENCE_TABLES: dict[str, str] = {
    "tenants": "no tenant_id (it is the tenant); every tenant table's foreign key points at it",
    "api_keys": "read by key hash before the tenant is known, on every request: a local read "
    "of a replicated table, not a query of every shard; keys are few and rarely written",
}
LOCAL_TABLES: dict[str, str] = {
    "schema_migrations": "the migration runner's own bookkeeping, on the coordinator only",
}


class MigrationError(RuntimeError):
    """The schema cannot be brought to the shape this code needs."""


def migration_files(directory: Path = MIGRATIONS_DIR) -> list[Path]:
    files = [p for p in directory.iterdir() if _NAME.match(p.name)]
    return sorted(files, key=lambda p: p.name)


async def migrate(dsn: str, directory: Path = MIGRATIONS_DIR) -> list[str]:
    """Apply pending migrations; returns the names applied by this call."""
    conn = await asyncpg.connect(dsn)
    applied: list[str] = []
    try:
        await conn.execute("SELECT pg_advisory_lock($1)", _LOCK_KEY)
        try:
            await conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                " name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
            )
            done = {r["name"] for r in await conn.fetch("SELECT name FROM schema_migrations")}
            for path in migration_files(directory):
                if path.name in done:
                    continue
                async with conn.transaction():
                    await conn.execute(path.read_text(encoding="utf-8"))
                    await conn.execute(
                        "INSERT INTO schema_migrations (name) VALUES ($1)", path.name
                    )
                applied.append(path.name)
                log.info("applied migration %s", path.name)
            citus = await has_citus(conn)
            if citus:
                await distribute(conn)
            # Functions whose body is a repository's statement (named by its hash):
            # installed on every run, so they always match this code.
            async with conn.transaction():
                for ddl in ROUTINES:
                    await conn.execute(ddl)
            if citus:
                await distribute_recall(conn)
        finally:
            await conn.execute("SELECT pg_advisory_unlock($1)", _LOCK_KEY)
    finally:
        await conn.close()
    return applied


async def has_citus(conn: asyncpg.Connection) -> bool:
    """True on a Citus coordinator: the database has the citus extension."""
    return bool(
        await conn.fetchval("SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')")
    )


async def table_placement(conn: asyncpg.Connection) -> dict[str, tuple[str, str | None]]:
    """Every table of the schema: name -> (citus_table_type or 'local', distribution column).
    Only meaningful on a Citus coordinator."""
    rows = await conn.fetch(
        """SELECT c.relname AS name,
                  coalesce(t.citus_table_type, 'local') AS kind,
                  t.distribution_column AS column
           FROM pg_class c
           JOIN pg_namespace n ON n.oid = c.relnamespace
           LEFT JOIN citus_tables t ON t.table_name = c.oid
           WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')
             AND NOT c.relispartition
           ORDER BY 1"""
    )
    return {r["name"]: (r["kind"], r["column"]) for r in rows}


async def tenant_tables(conn: asyncpg.Connection) -> list[str]:
    """Tables with a tenant_id column (REFERENCE_TABLES aside), `facts` first, then each
    after the tables its foreign keys point at (Citus distributes a referenced table first)."""
    names = [
        r["name"]
        for r in await conn.fetch(
            """SELECT c.relname AS name FROM pg_class c
               JOIN pg_namespace n ON n.oid = c.relnamespace
               JOIN pg_attribute a ON a.attrelid = c.oid AND NOT a.attisdropped
               WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')
                 AND NOT c.relispartition AND a.attname = $1
               ORDER BY 1""",
            DISTRIBUTION_COLUMN,
        )
        if r["name"] not in REFERENCE_TABLES
    ]
    edges = await conn.fetch(
        """SELECT c.conrelid::regclass::text AS child, c.confrelid::regclass::text AS parent
           FROM pg_constraint c WHERE c.contype = 'f' AND c.conrelid <> c.confrelid"""
    )
    parents: dict[str, set[str]] = {n: set() for n in names}
    for e in edges:
        if e["child"] in parents and e["parent"] in parents:
            parents[e["child"]].add(e["parent"])
    ordered: list[str] = []
    pending = sorted(names, key=lambda n: (n != COLOCATE_WITH, n))
    while pending:
        ready = [n for n in pending if parents[n] <= set(ordered)]
        if not ready:
            raise MigrationError(f"foreign keys form a cycle among {pending}")
        ordered.append(ready[0])
        pending.remove(ready[0])
    return ordered


async def distribute(conn: asyncpg.Connection) -> list[str]:
    """Citus only: bring every table to its place (idempotent; returns what it changed).

    The application role logs in on every node (the coordinator opens its connections to
    the workers as the current role: a NOLOGIN role reached with SET ROLE cannot), SET
    LOCAL reaches the workers (app/store/db.py set_tenant: RLS on the shards sees the
    tenant), and memgate_tenant() exists on the workers before any policy that calls it."""
    changed: list[str] = []
    await conn.execute("ALTER ROLE memgate_app LOGIN")
    database = await conn.fetchval("SELECT current_database()")
    await conn.execute(
        f"ALTER DATABASE {_ident(database)} SET citus.propagate_set_commands = 'local'"
    )
    await conn.execute("SET citus.propagate_set_commands = 'local'")
    if not await _function_distributed(conn, "memgate_tenant()"):
        await conn.execute("SELECT create_distributed_function('memgate_tenant()')")
        changed.append("memgate_tenant()")
    placement = await table_placement(conn)
    for name in REFERENCE_TABLES:
        if name in placement and placement[name][0] == "local":
            await conn.execute("SELECT create_reference_table($1::regclass)", name)
            changed.append(name)
    tables = await tenant_tables(conn)
    # Citus refuses to distribute a table that a local table references, and a local table
    # that references a distributed one (the coordinator already holds every table with a
    # foreign key to a reference table as a Citus local table): a foreign key between two
    # tenant tables not both distributed (webhook_deliveries → webhook_endpoints) is dropped,
    # both are distributed, and it is added back, now between colocated shards (it leads
    # with tenant_id).
    links = await conn.fetch(
        """SELECT c.conrelid::regclass::text AS child, c.conname AS name,
                  pg_get_constraintdef(c.oid) AS definition
           FROM pg_constraint c
           LEFT JOIN citus_tables child ON child.table_name = c.conrelid
           LEFT JOIN citus_tables parent ON parent.table_name = c.confrelid
           WHERE c.contype = 'f' AND c.conrelid <> c.confrelid
             AND c.conrelid::regclass::text = ANY($1::text[])
             AND c.confrelid::regclass::text = ANY($1::text[])
             AND NOT (coalesce(child.citus_table_type, '') = 'distributed'
                      AND coalesce(parent.citus_table_type, '') = 'distributed')""",
        tables,
    )
    for link in links:
        await conn.execute(
            f"ALTER TABLE {_ident(link['child'])} DROP CONSTRAINT {_ident(link['name'])}"
        )
    for name in tables:
        kind, column = placement[name]
        if kind == "local" and name not in LOCAL_TABLES:
            colocate = "default" if name == COLOCATE_WITH else COLOCATE_WITH
            await conn.execute(
                "SELECT create_distributed_table($1::regclass, $2, colocate_with => $3)",
                name,
                DISTRIBUTION_COLUMN,
                colocate,
            )
            changed.append(name)
        elif kind != "local" and (kind, column) != ("distributed", DISTRIBUTION_COLUMN):
            raise MigrationError(f"{name} is a {kind} table on {column}, not by tenant_id")
    for link in links:
        await conn.execute(
            f"ALTER TABLE {_ident(link['child'])} ADD CONSTRAINT {_ident(link['name'])} "
            + link["definition"]
        )
    placement = await table_placement(conn)
    stray = [n for n, (kind, _) in placement.items() if kind == "local" and n not in LOCAL_TABLES]
    if stray:
        raise MigrationError(
            f"tables {stray} have no tenant_id: add each to REFERENCE_TABLES or LOCAL_TABLES "
            "(app/store/migrate.py) with the reason"
        )
    for name in changed:
        log.info("citus: placed %s", name)
    return changed


async def distribute_recall(conn: asyncpg.Connection) -> None:
    """Citus only: the recall function runs on the worker that holds its tenant's shards
    (its first argument), colocated with facts: one round trip, one shard group. The write
    path's functions stay on the coordinator, where their advisory locks serialize writers."""
    signature = f"{RECALL_FUNCTION}({RECALL_ARGS})"
    if not await _function_distributed(conn, signature, by_argument=True):
        await conn.execute(
            "SELECT create_distributed_function($1::regprocedure, '$1', colocate_with => $2)",
            signature,
            COLOCATE_WITH,
        )
        log.info("citus: recall function %s delegated to the workers", RECALL_FUNCTION)


async def _function_distributed(
    conn: asyncpg.Connection, signature: str, *, by_argument: bool = False
) -> bool:
    """Whether the function exists on the workers (Citus propagates every function created
    on the coordinator), and with `by_argument`, whether calls go to the worker of their
    distribution argument."""
    return bool(
        await conn.fetchval(
            """SELECT EXISTS (SELECT 1 FROM pg_dist_object
               WHERE classid = 'pg_proc'::regclass AND objid = $1::regprocedure
                 AND (NOT $2 OR distribution_argument_index IS NOT NULL))""",
            signature,
            by_argument,
        )
    )


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


async def prune_routines(conn: asyncpg.Connection) -> list[str]:
    """Drop the hashed functions of earlier releases (every `memgate_recall_<hash>`,
    `memgate_lock_pool_<hash>`, `memgate_fence_<hash>` but this code's, and every
    `memgate_write_read_<hash>`, which no release uses any more). `migrate`
    leaves them so that replicas of the previous release keep working during a rolling
    deploy; run this once no replica of it is left."""
    rows = await conn.fetch(
        """SELECT p.oid::regprocedure::text AS signature FROM pg_proc p
           JOIN pg_namespace n ON n.oid = p.pronamespace
           WHERE n.nspname = current_schema() AND p.proname LIKE ANY($1::text[])
             AND p.proname <> ALL($2::text[])
           ORDER BY 1""",
        [prefix.replace("_", "\\_") + "%" for prefix in HASHED_PREFIXES],
        [RECALL_FUNCTION, LOCK_POOL_FUNCTION, FENCE_FUNCTION],
    )
    dropped = [r["signature"] for r in rows]
    async with conn.transaction():
        for signature in dropped:  # regprocedure text is already quoted where needed
            await conn.execute(f"DROP FUNCTION IF EXISTS {signature}")
    for signature in dropped:
        log.info("dropped %s", signature)
    return dropped


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    dsn = sys.argv[1]
    print("\n".join(asyncio.run(migrate(dsn))) or "up to date")
