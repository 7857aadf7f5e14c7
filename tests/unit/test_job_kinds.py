"""Every job kind the code creates has a handler in workers/settings.py, and every handler's
kind is created somewhere: a forgotten entry would fail its jobs ("unknown job kind")."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

from workers.settings import HANDLERS

ROOT = Path(__file__).resolve().parents[2]
JOBS_STORE = "app.store.jobs"


def _sources() -> list[Path]:
    return sorted([*ROOT.joinpath("app").rglob("*.py"), *ROOT.joinpath("workers").rglob("*.py")])


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def _jobs_store_names(tree: ast.Module) -> set[str]:
    """The local names under which a module imports app.store.jobs."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "app.store":
            names |= {a.asname or a.name for a in node.names if a.name == "jobs"}
        elif isinstance(node, ast.Import):
            names |= {a.asname for a in node.names if a.name == JOBS_STORE and a.asname}
    return names


def _kind_arg(call: ast.Call) -> ast.expr | None:
    # jobs_store.insert(conn, tenant_id, kind, payload, now, ...)
    for kw in call.keywords:
        if kw.arg == "kind":
            return kw.value
    return call.args[2] if len(call.args) > 2 else None


def created_kinds() -> dict[str, list[str]]:
    """Job kind → the places (file:line) that insert a job of that kind."""
    found: dict[str, list[str]] = {}
    for path in _sources():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        store_names = _jobs_store_names(tree)
        if not store_names:
            continue
        module = importlib.import_module(_module_name(path))
        for node in ast.walk(tree):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "insert"
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id in store_names
            ):
                continue
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            arg = _kind_arg(node)
            # the kind as the module sees it: a literal, or a constant such as queue.OBSERVE
            assert arg is not None, f"{where}: a job inserted without a kind"
            try:
                kind = eval(compile(ast.Expression(arg), where, "eval"), vars(module))
            except NameError as exc:
                raise AssertionError(
                    f"{where}: the job kind {ast.unparse(arg)!r} is not a module-level "
                    "constant (use one of app.queue's kinds) so this test cannot check it"
                ) from exc
            assert isinstance(kind, str), f"{where}: job kind {kind!r} is not a string"
            found.setdefault(kind, []).append(where)
    return found


def test_jobs_are_created_only_through_the_jobs_store() -> None:
    holders = [
        str(p.relative_to(ROOT))
        for p in _sources()
        if "insert into jobs" in p.read_text(encoding="utf-8").lower()
    ]
    assert holders == ["app/store/jobs.py"]


def test_every_created_kind_has_a_handler() -> None:
    created = created_kinds()
    assert created, "no job insert found: the scan is broken"
    missing = {kind: where for kind, where in created.items() if kind not in HANDLERS}
    assert not missing, f"job kinds without a handler in workers/settings.py: {missing}"


def test_every_handler_kind_is_created_somewhere() -> None:
    unused = set(HANDLERS) - set(created_kinds())
    assert not unused, f"handlers of job kinds nothing creates: {sorted(unused)}"
