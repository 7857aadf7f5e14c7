"""`memgate`: the operator console (README.md#operator-console).

It wraps the operator CLI (app/cli.py: create-tenant, create-key, revoke-key, migrate,
import-mem0, prune-routines, run as they are) and adds readable views: tenants, keys,
a user's facts, a recall, what a cleanup would forget, jobs and their progress bars.
`--json` on any view prints JSON for scripts instead of a table.

It reaches the data as the CLI does (DATABASE_URL and REDIS_URL, or the embedded stack
under DATA_DIR) and through the services the API calls (app/services, app/recall.py), as
the tenant's admin with no scope limit: `CONSOLE` is the actor its audit rows name. Only
`tenants list` and finding a job's tenant read across tenants, on the owner's connection.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg
from pydantic import ValidationError
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from app import cli, clock
from app.auth import Principal
from app.config import Settings
from app.context import AppContext, build_context, close_context
from app.errors import MemgateError
from app.memory.model import FactType, Role, Sensitivity, SourceKind
from app.queue import enqueue
from app.recall import recall as run_recall
from app.services import facts as facts_service
from app.services import keys as keys_service
from app.services import observations as jobs_service
from app.services import ops as ops_service
from app.shapes import fact_json, job_json, key_json
from app.store import jobs as jobs_store
from app.store import keys as keys_store

# The actor of the console's audit rows (a key id no key has): "done at the console".
CONSOLE = uuid.UUID(int=0)
# app/cli.py's commands, run as they are (their last line of stdout is their answer).
CLI_COMMANDS = (
    "migrate",
    "prune-routines",
    "create-tenant",
    "create-key",
    "revoke-key",
    "import-mem0",
)
PAGE = 200  # rows per service call when a view lists everything
FINISHED = ("done", "failed")


class ConsoleError(Exception):
    """Bad input or nothing found: a message on stderr and exit status 1."""


@dataclass
class Session:
    """One command's connections: the owner's (cross-tenant lookups) and the API's context."""

    owner: asyncpg.Connection
    ctx: AppContext

    async def tenant(self, name_or_id: str) -> uuid.UUID:
        try:
            return await cli.tenant_id_of(self.owner, name_or_id)
        except SystemExit as exc:
            raise ConsoleError(str(exc)) from None

    async def principal(self, name_or_id: str, sensitivity: str = "personal") -> Principal:
        return Principal(
            key_id=CONSOLE,
            tenant_id=await self.tenant(name_or_id),
            role=Role.ADMIN,
            scopes=None,
            max_sensitivity=Sensitivity(sensitivity),
        )


@asynccontextmanager
async def session(*, with_embedder: bool = False) -> AsyncIterator[Session]:
    async with cli.stack_settings() as settings:
        assert settings.database_url is not None
        owner = await asyncpg.connect(settings.database_url)
        try:
            ctx = await build_context(_quiet(settings), with_embedder=with_embedder)
            try:
                yield Session(owner, ctx)
            finally:
                await close_context(ctx)
        finally:
            await owner.close()


def _quiet(settings: Settings) -> Settings:
    # a console command is no server: a pool of two is plenty
    return settings.model_copy(update={"db_pool_min": 1, "db_pool_max": 2})


# ------------------------------------------------------------------------------- output


class Out:
    """Tables (or JSON with --json) on stdout; messages on stderr."""

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json
        self.console = Console(soft_wrap=False)
        if not self.console.is_terminal:  # a pipe or a file: wide, never cut a column
            self.console = Console(width=200, soft_wrap=False, color_system=None)
        self.err = Console(stderr=True)

    def json(self, data: Any) -> None:
        print(json.dumps(data, ensure_ascii=False, default=str))

    def table(self, title: str, columns: Sequence[str], rows: list[list[Any]]) -> None:
        table = Table()
        for col in columns:
            table.add_column(col, overflow="fold")
        for row in rows:
            table.add_row(*(Text(_printable(v)) for v in row))
        self.console.print(title, markup=False, highlight=False)  # never wrapped to the table
        self.console.print(table)


def _printable(value: Any) -> str:
    """A cell as plain text: stored text (a statement) is never rich markup, and a control
    character is shown escaped rather than sent to the terminal."""
    text = "" if value is None else str(value)
    return "".join(
        c if c.isprintable() or c == " " else c.encode("unicode_escape").decode() for c in text
    )


def _day(value: str | datetime | None) -> str:
    if value is None:
        return ""
    text = value.isoformat() if isinstance(value, datetime) else value
    return text[:19].replace("T", " ")


# ------------------------------------------------------------------------------- views


async def tenants_list(s: Session, out: Out) -> int:
    rows = await keys_store.list_tenants(s.owner)
    items = [
        {"id": str(r["id"]), "name": r["name"], "created_at": r["created_at"].isoformat()}
        for r in rows
    ]
    if out.as_json:
        out.json({"items": items})
    else:
        out.table(
            f"{len(items)} tenant(s)",
            ["id", "name", "created"],
            [[i["id"], i["name"], _day(i["created_at"])] for i in items],
        )
    return 0


async def keys_list(s: Session, out: Out, args: argparse.Namespace) -> int:
    who = await s.principal(args.tenant, "restricted")  # every key of the tenant
    items: list[dict[str, Any]] = []
    after: uuid.UUID | None = None
    while True:
        rows = await keys_service.list_page(s.ctx, who, after, PAGE)
        items += [key_json(r) for r in rows]  # never the key: only its hash rests
        if len(rows) < PAGE:
            break
        after = rows[-1]["id"]
    if out.as_json:
        out.json({"items": items})
    else:
        out.table(
            f"keys of {args.tenant}",
            ["id", "name", "role", "scopes", "ceiling", "created", "revoked"],
            [
                [
                    k["id"],
                    k["name"],
                    k["role"],
                    "all" if k["scopes"] is None else ",".join(k["scopes"]),
                    k["max_sensitivity"],
                    _day(k["created_at"]),
                    _day(k["revoked_at"]),
                ]
                for k in items
            ],
        )
    return 0


async def facts_list(s: Session, out: Out, args: argparse.Namespace) -> int:
    who = await s.principal(args.tenant, args.max_sensitivity)
    rows = await facts_service.list_page(
        s.ctx,
        who,
        args.user,
        None,
        args.limit,
        scope=args.scope,
        type=args.type,
        status=args.status,
        source_kind=args.source_kind,
    )
    items = [fact_json(r) for r in rows]
    if out.as_json:
        out.json({"items": items})
    else:
        out.table(
            f"facts of {args.user} ({len(items)}, newest first)",
            ["id", "type", "status", "scope", "statement", "confidence", "source", "created"],
            [
                [
                    f["id"],
                    f["type"],
                    f["status"],
                    f["scope"],
                    f["statement"],
                    f"{f['confidence']:.2f}",
                    (f.get("source") or {}).get("kind"),
                    _day(f["created_at"]),
                ]
                for f in items
            ],
        )
    return 0


async def recall(s: Session, out: Out, args: argparse.Namespace) -> int:
    from app.api.schemas.recall import RecallRequest

    who = await s.principal(args.tenant, args.max_sensitivity)
    try:
        req = RecallRequest.model_validate(
            {"query": args.query, "k": args.k, "scope": args.scope}, strict=False
        )
    except ValidationError as exc:
        raise ConsoleError(_validation_text(exc)) from None
    answer = await run_recall(s.ctx, who, args.user, req, clock.now())
    if out.as_json:
        out.json(answer)
        return 0
    out.table(
        f"recall for {args.user}: {args.query!r} (trace {answer['trace_id']})",
        ["score", "statement", "type", "scope", "channels", "id"],
        [
            [
                f"{f['score']:.3f}",
                f["statement"],
                f["type"],
                f["scope"],
                ",".join(f.get("channels") or []),
                f["id"],
            ]
            for f in answer["facts"]
        ],
    )
    out.console.print(f"{answer['tokens']} tokens, tier {answer.get('tier')}")
    return 0


def _validation_text(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'input'}: {e['msg']}" for e in exc.errors()
    )


async def cleanup(s: Session, out: Out, args: argparse.Namespace) -> int:
    if not args.dry_run:
        raise ConsoleError(
            "the console only counts what a cleanup would forget (--dry-run); run the "
            "cleanup itself with POST /v1/ops/cleanup (docs/lifecycle.md#batch-cleanup)"
        )
    who = await s.principal(args.tenant, args.max_sensitivity)
    flt = ops_service.cleanup_filter(
        who,
        source_kind=args.source_kind,
        status=args.status,
        type=args.type,
        created_before=args.created_before,
        created_after=args.created_after,
        max_confidence=args.max_confidence,
        user_id=args.user,
        scope=args.scope,
        candidate=args.candidate,
    )
    detail = {
        k: (v.isoformat() if isinstance(v, datetime) else v)
        for k, v in {
            "source_kind": args.source_kind,
            "status": args.status,
            "type": args.type,
            "created_before": args.created_before,
            "created_after": args.created_after,
            "max_confidence": args.max_confidence,
            "user_id": args.user,
            "scope": args.scope,
            "candidate": args.candidate or None,
        }.items()
        if v is not None
    }
    run = await ops_service.cleanup(
        s.ctx,
        who,
        flt,
        args.action,
        dry_run=True,
        filter_detail=detail,
        now=clock.now(),
        large_run=0,
    )
    answer = {"dry_run": True, "action": args.action, "total": run.total, "by_user": run.by_user}
    if out.as_json:
        out.json(answer)
        return 0
    what = "candidates" if args.candidate else "facts"
    out.table(
        f"a cleanup would {args.action} {run.total} {what} (a dry run: nothing changed)",
        ["user", what],
        [[u, n] for u, n in sorted(run.by_user.items())],
    )
    return 0


async def queue(s: Session, out: Out, args: argparse.Namespace) -> int:
    """`reembed` and `purge`: queue the job (as the API does), then show it or wait."""
    who = await s.principal(args.tenant)
    now = clock.now()
    if args.command == "reembed":
        if s.ctx.embedder is None:
            raise ConsoleError("no embedder is configured")
        job_id = await ops_service.queue_reembed(s.ctx, who, s.ctx.embedder.model, now)
    else:
        job_id = await ops_service.queue_purge(s.ctx, who, now)
    await enqueue(s.ctx, job_id, who.tenant_id)  # else the workers' relay hands it over
    if args.wait:
        return await wait(s, out, who, job_id, args.interval)
    if out.as_json:
        out.json({"job_id": str(job_id)})
    else:
        out.console.print(f"queued {args.command} job {job_id}")
    return 0


async def _job_of(s: Session, job: str, tenant: str | None) -> tuple[Principal, uuid.UUID]:
    try:
        job_id = uuid.UUID(job)
    except ValueError:
        raise ConsoleError(f"not a job id: {job!r}") from None
    owner = await jobs_store.tenant_of(s.owner, job_id)
    if owner is None or (tenant is not None and owner != await s.tenant(tenant)):
        raise ConsoleError(f"no job {job}" + (f" in tenant {tenant!r}" if tenant else ""))
    return await s.principal(str(owner)), job_id


async def _job(s: Session, who: Principal, job_id: uuid.UUID) -> dict[str, Any]:
    row = await jobs_service.job(s.ctx, who, job_id)
    if row is None:
        raise ConsoleError(f"no job {job_id}")
    return job_json(row)


async def jobs_show(s: Session, out: Out, args: argparse.Namespace) -> int:
    who, job_id = await _job_of(s, args.id, args.tenant)
    job = await _job(s, who, job_id)
    if out.as_json:
        out.json(job)
    else:
        _print_job(out, job)
    return 0


async def jobs_wait(s: Session, out: Out, args: argparse.Namespace) -> int:
    who, job_id = await _job_of(s, args.id, args.tenant)
    return await wait(s, out, who, job_id, args.interval)


async def wait(s: Session, out: Out, who: Principal, job_id: uuid.UUID, interval: float) -> int:
    """Poll the job until it is done or failed, drawing `{done, total}` as a bar; the exit
    status is 0 for done, 1 for failed."""
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=out.err,  # stdout keeps the answer only
        disable=out.as_json,
    )
    with bar:
        task = bar.add_task(f"job {job_id}", total=None)
        while True:
            job = await _job(s, who, job_id)
            done, total = progress_of(job)
            bar.update(
                task,
                description=f"{job['kind']} {job['state']}",
                completed=done or 0,
                total=total,
            )
            if job["state"] in FINISHED:
                break
            await asyncio.sleep(interval)
    if out.as_json:
        out.json(job)
    else:
        _print_job(out, job)
    return 0 if job["state"] == "done" else 1


def progress_of(job: dict[str, Any]) -> tuple[int | None, int | None]:
    """(done, total) of a job's result, when it reports them (docs/api.md#jobs)."""
    result = job.get("result")
    if not isinstance(result, dict):
        return None, None
    done, total = result.get("done"), result.get("total")
    return (
        done if isinstance(done, int) else None,
        total if isinstance(total, int) else None,
    )


def _print_job(out: Out, job: dict[str, Any]) -> None:
    done, total = progress_of(job)
    rows = [
        ["id", job["id"]],
        ["kind", job["kind"]],
        ["state", job["state"]],
        ["attempts", job["attempts"]],
        ["progress", f"{done}/{total}" if total is not None else ""],
        ["created", _day(job["created_at"])],
        ["updated", _day(job["updated_at"])],
        ["decisions", len(job["decisions"])],
    ]
    if job.get("error"):
        rows.append(["error", job["error"]])
    out.table(f"job {job['id']}", ["field", "value"], rows)
    if isinstance(job.get("result"), dict):
        out.console.print_json(json.dumps(job["result"], default=str))


# ------------------------------------------------------------------------------- parsing


def _when(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO date-time: {text!r}") from None
    if value.tzinfo is None:
        raise argparse.ArgumentTypeError(f"give a time zone: {text!r}")
    return value


def _confidence(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError("between 0 and 1")
    return value


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("above 0")
    return value


def parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="JSON on stdout, for scripts")
    tenant = argparse.ArgumentParser(add_help=False)
    tenant.add_argument("--tenant", required=True, help="tenant id or name")
    ceiling = argparse.ArgumentParser(add_help=False)
    ceiling.add_argument(
        "--max-sensitivity",
        default="personal",
        choices=[s.value for s in Sensitivity],
        help="the most sensitive facts shown (default personal, as a new key)",
    )
    waiting = argparse.ArgumentParser(add_help=False)
    waiting.add_argument("--interval", type=_positive, default=0.5, help="seconds between polls")

    p = argparse.ArgumentParser(
        prog="memgate",
        description="memgate's operator console (README.md#operator-console).",
        epilog="Also, as `python -m app.cli` runs them: " + ", ".join(CLI_COMMANDS) + ".",
    )
    sub = p.add_subparsers(dest="command", required=True)

    tenants = sub.add_parser("tenants", help="tenants").add_subparsers(dest="action", required=True)
    tenants.add_parser("list", parents=[common], help="every tenant")

    keys = sub.add_parser("keys", help="API keys").add_subparsers(dest="action", required=True)
    keys.add_parser("list", parents=[common, tenant], help="a tenant's keys (never the key)")

    facts = sub.add_parser("facts", help="facts").add_subparsers(dest="action", required=True)
    f = facts.add_parser("list", parents=[common, tenant, ceiling], help="a user's facts")
    f.add_argument("--user", required=True)
    f.add_argument("--type", choices=[t.value for t in FactType])
    f.add_argument("--status", choices=["active", "superseded", "archived"])
    f.add_argument("--scope")
    f.add_argument("--source-kind", choices=[k.value for k in SourceKind])
    f.add_argument("--limit", type=int, default=100, choices=range(1, 1001), metavar="1..1000")

    r = sub.add_parser("recall", parents=[common, tenant, ceiling], help="what recall injects")
    r.add_argument("--user", required=True)
    r.add_argument("query")
    r.add_argument("--k", type=int, default=None, help="facts at most (1..50; default policy)")
    r.add_argument("--scope")

    c = sub.add_parser(
        "cleanup", parents=[common, tenant, ceiling], help="what a cleanup would forget"
    )
    c.add_argument("--dry-run", action="store_true", help="count only (the console's only mode)")
    c.add_argument("--action", choices=["archive", "delete"], default="delete")
    c.add_argument("--user")
    c.add_argument("--scope")
    c.add_argument("--type", choices=[t.value for t in FactType])
    c.add_argument("--status", choices=["active", "superseded", "archived"])
    c.add_argument("--source-kind", choices=[k.value for k in SourceKind])
    c.add_argument("--created-before", type=_when)
    c.add_argument("--created-after", type=_when)
    c.add_argument("--max-confidence", type=_confidence)
    c.add_argument("--candidate", action="store_true", help="extracted candidates, not facts")

    for name, what in (
        ("reembed", "re-embed every fact with the configured model"),
        ("purge", "purge the deleted facts' copies now"),
    ):
        q = sub.add_parser(name, parents=[common, tenant, waiting], help=f"queue a job: {what}")
        q.add_argument("--wait", action="store_true", help="show a progress bar until it ends")

    jobs = sub.add_parser("jobs", help="jobs").add_subparsers(dest="action", required=True)
    for name, what in (("show", "a job's state"), ("wait", "a progress bar until it ends")):
        j = jobs.add_parser(name, parents=[common, waiting], help=what)
        j.add_argument("id")
        j.add_argument("--tenant", help="tenant id or name (checked: the job must be its)")
    return p


async def _run(args: argparse.Namespace, out: Out) -> int:
    command = (
        args.command
        if args.command in ("recall", "cleanup", "reembed", "purge")
        else (f"{args.command} {args.action}")
    )
    async with session(with_embedder=command in ("recall", "reembed")) as s:
        if command == "tenants list":
            return await tenants_list(s, out)
        if command == "keys list":
            return await keys_list(s, out, args)
        if command == "facts list":
            return await facts_list(s, out, args)
        if command == "recall":
            return await recall(s, out, args)
        if command == "cleanup":
            return await cleanup(s, out, args)
        if command in ("reembed", "purge"):
            return await queue(s, out, args)
        if command == "jobs show":
            return await jobs_show(s, out, args)
        if command == "jobs wait":
            return await jobs_wait(s, out, args)
    raise ConsoleError(f"unknown command {command}")


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in CLI_COMMANDS:
        cli.main(argv)
        return
    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(message)s"
    )
    args = parser().parse_args(argv)
    out = Out(args.json)
    try:
        status = asyncio.run(_run(args, out))
    except ConsoleError as exc:
        out.err.print(f"memgate: error: {exc}", markup=False, highlight=False)
        raise SystemExit(1) from None
    except MemgateError as exc:
        out.err.print(f"memgate: error: {exc.code}: {exc.message}", markup=False, highlight=False)
        raise SystemExit(1) from None
    raise SystemExit(status)


if __name__ == "__main__":
    main()
