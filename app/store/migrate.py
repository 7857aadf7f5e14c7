"""Apply migrations/NNNN_*.sql in order, once each, under an advisory lock.

Safe to run twice and from two processes at once: the lock serializes runners and the
`schema_migrations` table records what is applied. Runs as the connecting (owner) role.
Then (re)installs the SQL functions the repositories define (see app/store/recall.py).
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
from app.store.recall import RECALL_FUNCTION, RECALL_FUNCTION_DDL
from app.store.users import FENCE_FUNCTION, FENCE_FUNCTION_DDL

log = logging.getLogger("memgate.migrate")
MIGRATIONS_DIR = ROOT / "migrations"
_LOCK_KEY = 0x6D656D67617465  # "memgate"
ROUTINES = (RECALL_FUNCTION_DDL, LOCK_POOL_FUNCTION_DDL, FENCE_FUNCTION_DDL)
HASHED_PREFIXES = ("memgate_recall_", "memgate_lock_pool_", "memgate_fence_")
_NAME = re.compile(r"^(\d{4})_[\w-]+\.sql$")


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
            # Functions whose body is a repository's statement (named by its hash):
            # installed on every run, so they always match this code.
            async with conn.transaction():
                for ddl in ROUTINES:
                    await conn.execute(ddl)
        finally:
            await conn.execute("SELECT pg_advisory_unlock($1)", _LOCK_KEY)
    finally:
        await conn.close()
    return applied


async def prune_routines(conn: asyncpg.Connection) -> list[str]:
    """Drop the hashed functions of earlier releases (every `memgate_recall_<hash>`,
    `memgate_lock_pool_<hash>` and `memgate_fence_<hash>` but this code's). `migrate`
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
