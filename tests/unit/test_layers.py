"""SQL lives in app/store/ only: no string constant elsewhere under app/ reads like SQL.

The scan looks at string literals only (the `ast` of each file, f-string parts included),
so a comment or an identifier such as `pg_data` never counts. Docstrings count too: a
statement quoted there is a statement someone copied out of the store.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[2] / "app"
STORE = APP / "store"

SQL = re.compile(
    r"""
    \bselect\s+(?:distinct\s+)?
      (?:[\w.*]+(?:\s*\([^()]*\))?(?:\s+as\s+\w+)?\s*(?:,|\bfrom\b)  # SELECT a, / a FROM
      | [\w.]+\s*\(                                  # SELECT f(
      | \d+\s*$ | \*)                                 # SELECT 1 / SELECT *
    | \bfrom\s+\w+(?:\s+\w+)?\s+where\b               # FROM t [alias] WHERE
    | \binsert\s+into\b
    | \bupdate\s+\w+(?:\s+\w+)?\s+set\b                # UPDATE t [alias] SET
    | \bdelete\s+from\b
    | \btruncate\s+(?:table\s+)?\w
    | \b(?:create|alter|drop)\s+(?:or\s+replace\s+|unique\s+)?
        (?:table|index|extension|role|schema|function|policy|view|trigger|type|sequence
        |database|procedure)\b
    | \bwith\s+(?:recursive\s+)?\w+\s+as\s*(?:(?:not\s+)?materialized\s*)?\(  # WITH x AS (
    | \bon\s+conflict\b
    | \breturning\s+(?:\*|\d|[\w.]+\s*(?:,|$|\bas\b))
    | \bpg_(?:try_)?advisory\w*\s*\(
    | \bset_config\s*\(
    | \bset\s+(?:local\s+)?role\b
    | \bvalues\s*\(\s*\$\d
    | (?:=|<>|<=|>=|<|>)\s*\$\d | \$\d+::\w        # a $n parameter compared or cast
    """,
    re.IGNORECASE | re.VERBOSE,
)


def _text(node: ast.JoinedStr) -> str:
    """An f-string as one text, each replacement field read as a bare name."""
    return "".join(
        str(part.value) if isinstance(part, ast.Constant) else "x" for part in node.values
    )


def sql_strings(source: str) -> list[tuple[int, str]]:
    """(line, text) of every string literal in `source` that reads like SQL."""
    found = []
    inside_fstrings: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.JoinedStr):
            inside_fstrings.update(id(part) for part in node.values)
            text = _text(node)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) in inside_fstrings:
                continue
            text = node.value
        else:
            continue
        if SQL.search(text):
            found.append((node.lineno, text))
    return sorted(found)


@pytest.mark.parametrize(
    "text",
    [
        "SELECT id FROM tenants WHERE name = $1",
        "select 1",
        "SELECT * FROM memgate_fact_counts()",
        "SELECT set_config('app.tenant_id', $1, true)",
        "SELECT pg_advisory_xact_lock($1)",
        "INSERT INTO user_state (tenant_id) VALUES ($1)",
        "UPDATE facts SET confidence = $2 WHERE id = $1",
        "UPDATE tenants t SET name = $2",
        "delete from idempotency where key = $1",
        "WITH picked AS (SELECT 1) SELECT 2",
        "CREATE INDEX facts_idx ON facts (id)",
        "ALTER TABLE facts ADD COLUMN x int",
        "DROP FUNCTION memgate_lookup_key",
        "SET ROLE memgate_app",
        "... ON CONFLICT (tenant_id, user_id) DO UPDATE",
        "SELECT count(*) FROM tenants",
        "  FROM facts WHERE tenant_id = $1",
        "x RETURNING confidence, feedback_up",
    ],
)
def test_the_scan_sees_sql(text: str) -> None:
    assert sql_strings(f"x = {text!r}\n") == [(1, text)]


@pytest.mark.parametrize(
    "text",
    [
        "select the best candidates from the pool",  # prose: no SQL shape
        "Updates the user's state",
        "delete the fact",
        "created_at",
        "the gate decides; the store writes",
        "with the tenant as key",
        "returning the first answer",
        "a retry waits for the answer, then takes over",
    ],
)
def test_the_scan_ignores_prose(text: str) -> None:
    assert sql_strings(f"x = {text!r}\n") == []


def test_the_scan_reads_only_string_literals() -> None:
    source = (
        "# SELECT id FROM facts\npg_data = 1\nq = f'SELECT {COLUMNS} FROM {table} WHERE id = $1'\n"
    )
    assert sql_strings(source) == [(3, "SELECT x FROM x WHERE id = $1")]


def test_no_sql_outside_the_store() -> None:
    """bench/, tests/ and migrations/ are outside app/ and exempt."""
    offenders = []
    for path in sorted(APP.rglob("*.py")):
        if STORE in path.parents:
            continue
        for line, text in sql_strings(path.read_text(encoding="utf-8")):
            first = " ".join(text.split())[:60]
            offenders.append(f"{path.relative_to(APP.parent)}:{line}: {first}")
    assert not offenders, "SQL outside app/store/:\n" + "\n".join(offenders)


def test_the_store_is_where_the_sql_is() -> None:
    """The scan finds the store's statements: a pattern that matched nothing would pass."""
    assert sql_strings((STORE / "keys.py").read_text(encoding="utf-8"))
