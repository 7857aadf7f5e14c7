"""Operator CLI: tenants and keys (docs/isolation.md#keys-and-roles).

    python -m app.cli create-tenant NAME          → tenant id (last line of stdout)
    python -m app.cli create-key --tenant ID --role agent|ops|admin [--scopes S ...]
                                                  → the new key, shown once (last line)
    python -m app.cli revoke-key ID               → the revoked key id
    python -m app.cli migrate                     → applies migrations
    python -m app.cli import-mem0 FILE --tenant T [--dry-run]
                                                  → the import's report (JSON, last line)

`import-mem0` reads mem0's export (the JSON of `Memory.get_all()`, its platform export, a
list of memories, or NDJSON) and runs the same import as `POST /v1/admin/import?format=mem0`
(docs/api.md#bulk-import): every memory through the gate, refusals listed by mem0 id.

Uses DATABASE_URL, or the embedded stack under DATA_DIR when it is unset. Logs go to
stderr so that scripts can capture stdout's last line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import asyncpg

from app.auth import new_api_key
from app.config import Settings, get_settings
from app.store import keys as keys_store
from app.store.migrate import migrate, prune_routines

log = logging.getLogger("memgate.cli")


async def _answers(dsn: str) -> bool:
    try:
        conn = await asyncpg.connect(dsn, timeout=3)
    except (OSError, asyncpg.PostgresError, TimeoutError):
        return False
    await conn.close()
    return True


@asynccontextmanager
async def database_url() -> AsyncIterator[str]:
    """DATABASE_URL, or the embedded server under DATA_DIR (attached or started)."""
    settings = get_settings()
    if settings.database_url:
        yield settings.database_url
        return
    from app.embedded import EmbeddedStack

    stack = EmbeddedStack(settings.data_dir.resolve())
    if await _answers(stack.database_url):  # a running `make run` owns the servers
        yield stack.database_url
        return
    stack.start()
    try:
        yield stack.database_url
    finally:
        stack.stop()


async def create_tenant(conn: asyncpg.Connection, name: str) -> uuid.UUID:
    existing = await keys_store.tenant_by_name(conn, name)
    if existing:
        log.info("tenant %s exists", name)
        return existing
    tenant_id = uuid.uuid4()
    await keys_store.insert_tenant(conn, tenant_id, name)
    log.info("created tenant %s", name)
    return tenant_id


async def create_key(
    conn: asyncpg.Connection,
    tenant: str,
    role: str,
    scopes: list[str] | None = None,
    name: str | None = None,
    max_sensitivity: str = "personal",
) -> str:
    tenant_id = await tenant_id_of(conn, tenant)
    secret = new_api_key()
    await keys_store.insert_key(
        conn,
        tenant_id=tenant_id,
        secret=secret,
        kind="key",
        role=role,
        name=name,
        scopes=scopes,
        max_sensitivity=max_sensitivity,
    )
    log.info("created %s key for tenant %s", role, tenant_id)
    return secret


async def _run(args: argparse.Namespace) -> str:
    async with database_url() as dsn:
        await migrate(dsn)
        conn = await asyncpg.connect(dsn)
        try:
            if args.command == "migrate":
                return "ok"
            if args.command == "prune-routines":
                return "\n".join(await prune_routines(conn)) or "nothing to drop"
            if args.command == "create-tenant":
                return str(await create_tenant(conn, args.name))
            if args.command == "create-key":
                return await create_key(
                    conn, args.tenant, args.role, args.scopes, args.name, args.max_sensitivity
                )
            if args.command == "revoke-key":
                revoked = await keys_store.revoke_any(conn, uuid.UUID(args.id))
                if revoked is None:
                    raise SystemExit(f"no key {args.id}")
                return str(revoked)
        finally:
            await conn.close()
    raise SystemExit(f"unknown command {args.command}")


def read_export(path: str, fmt: str) -> list[Any]:
    """The file's items, validated as the import endpoint validates its body: a JSON
    document as a whole, anything else line by line (malformed lines exit non-zero)."""
    from app.api.import_lines import ItemReader
    from app.errors import MemgateError

    raw = Path(path).read_bytes()
    reader = ItemReader(fmt)
    try:
        json.loads(raw)
        reader.add(1, raw)
    except ValueError:  # not one document: NDJSON
        for number, line in enumerate(raw.split(b"\n"), start=1):
            reader.add(number, line)
    try:
        return list(reader.items())
    except MemgateError as exc:
        raise SystemExit(f"{exc}: {json.dumps(exc.details)[:2000]}") from None


@asynccontextmanager
async def stack_settings() -> AsyncIterator[Settings]:
    """The settings with both servers' URLs: DATABASE_URL and REDIS_URL, or the embedded
    stack under DATA_DIR (attached when a running `make run` owns it, else started here and
    stopped at the end). Migrated, like every command here."""
    settings = get_settings()
    started = None  # the embedded stack this command started (and stops)
    if not settings.database_url or not settings.redis_url:
        from app.embedded import EmbeddedStack

        stack = EmbeddedStack(settings.data_dir.resolve())
        if not await _answers(stack.database_url):  # else a running `make run` owns it
            stack.start()
            started = stack
        settings = settings.model_copy(
            update={"database_url": stack.database_url, "redis_url": stack.redis_url}
        )
    try:
        assert settings.database_url is not None
        await migrate(settings.database_url)
        yield settings
    finally:
        if started is not None:
            started.stop()


async def import_file(args: argparse.Namespace) -> str:
    """`import-mem0`: the import in this process, with the API's own context."""
    from app.context import build_context, close_context
    from app.importer import import_now

    items = read_export(args.file, "mem0")
    async with stack_settings() as settings:
        assert settings.database_url is not None
        conn = await asyncpg.connect(settings.database_url)
        try:
            tenant_id = await tenant_id_of(conn, args.tenant)
        finally:
            await conn.close()
        ctx = await build_context(settings)
        try:
            job_id, report = await import_now(ctx, tenant_id, items, "mem0", args.dry_run)
        finally:
            await close_context(ctx)
    return json.dumps({"job_id": str(job_id), **report}, ensure_ascii=False)


async def tenant_id_of(conn: asyncpg.Connection, tenant: str) -> uuid.UUID:
    """A tenant named by id or name (an id of no tenant is refused too)."""
    try:
        tenant_id = uuid.UUID(tenant)
    except ValueError:
        found = await keys_store.tenant_by_name(conn, tenant)
        if found is None:
            raise SystemExit(f"no tenant {tenant!r}") from None
        return found
    if not await keys_store.tenant_exists(conn, tenant_id):
        raise SystemExit(f"no tenant {tenant!r}")
    return tenant_id


def main(argv: list[str] | None = None) -> None:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(message)s")
    parser = argparse.ArgumentParser(prog="python -m app.cli")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("migrate")
    sub.add_parser(
        "prune-routines",
        help="drop the recall functions of earlier releases (after a rolling deploy)",
    )
    p = sub.add_parser("create-tenant")
    p.add_argument("name")
    p = sub.add_parser("create-key")
    p.add_argument("--tenant", required=True, help="tenant id or name")
    p.add_argument("--role", required=True, choices=["agent", "ops", "admin"])
    p.add_argument("--scopes", nargs="*", default=None)
    p.add_argument("--name", default=None)
    p.add_argument(
        "--max-sensitivity",
        default="personal",
        choices=["normal", "personal", "confidential", "restricted"],
    )
    p = sub.add_parser("revoke-key")
    p.add_argument("id")
    p = sub.add_parser("import-mem0", help="import mem0's export through the gate")
    p.add_argument("file")
    p.add_argument("--tenant", required=True, help="tenant id or name")
    p.add_argument("--dry-run", action="store_true", help="screen only, write nothing")
    args = parser.parse_args(argv)
    if args.command == "import-mem0":
        print(asyncio.run(import_file(args)))
        return
    print(asyncio.run(_run(args)))


if __name__ == "__main__":
    main()
