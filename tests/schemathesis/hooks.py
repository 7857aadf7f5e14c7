"""schemathesis hooks: positive cases that break a rule JSON Schema cannot state.

The OpenAPI document says everything a field accepts; a few rules tie fields together
(documented in the models' descriptions and docs/data-model.md#the-fact), need a value only the
server hands out (a cursor), or depend on the secret detectors (an identifier holding a
secret is refused). A generated "valid" case that breaks one is not valid, so it is not sent as a
positive case; negative cases are untouched.
"""

from __future__ import annotations

import json
from typing import Any

import schemathesis
from hypothesis import strategies as st

from app.api.validation import INT_MAX, INT_MIN, MAX_JSON_DEPTH
from app.memory.screening import identifier_holds_secret, secret_keys
from app.memory.webhooks import url_problem

# POST /v1/admin/import reads NDJSON, which JSON Schema cannot describe (a string of lines):
# its valid bodies are drawn from these, one generic line or a few (mem0 lines need
# `format=mem0`, see filter_case).
_IMPORT_LINES = [
    {
        "user_id": "st",
        "type": "semantic",
        "statement": "The user likes green tea",
        "source": {"kind": "user_message"},
    },
    {
        "user_id": "st2",
        "id": "x-1",
        "type": "profile",
        "predicate": "preferred_language",
        "value": "English",
        "statement": "The user prefers English",
    },
]
schemathesis.openapi.media_type(
    "application/x-ndjson",
    st.lists(st.sampled_from(_IMPORT_LINES), min_size=1, max_size=3).map(
        lambda lines: b"\n".join(json.dumps(line).encode() for line in lines) + b"\n"
    ),
)

# Fields screened as identifiers: one holding a secret is refused, 422 secret_in_identifier
# (README "Security model"); random strings often look like one.
_IDENTIFIERS = frozenset({"scope", "scopes", "user_id", "session_id", "trace_id", "turn_id"})


def _holds_secret(value: Any, key: str | None = None) -> bool:
    if isinstance(value, dict):
        return any(_holds_secret(v, k) for k, v in value.items())
    if isinstance(value, list):
        return any(_holds_secret(v, key) for v in value)
    return isinstance(value, str) and key in _IDENTIFIERS and identifier_holds_secret(value)


def _outside_json_limits(value: Any, depth: int = 1) -> bool:
    """Free-form JSON (a fact's value, slots, policy maps) has no schema to carry the body
    limits: 64-bit integers, nesting depth (README "Input limits")."""
    if depth > MAX_JSON_DEPTH:
        return True
    if isinstance(value, dict):
        return any(_outside_json_limits(v, depth + 1) for v in value.values())
    if isinstance(value, list):
        return any(_outside_json_limits(v, depth + 1) for v in value)
    return (
        isinstance(value, int) and not isinstance(value, bool) and not (INT_MIN <= value <= INT_MAX)
    )


def _refused_as_secret(case: Any) -> bool:
    params = case.path_parameters or {}
    if any(isinstance(v, str) and identifier_holds_secret(v) for v in params.values()):
        return True
    if _holds_secret(case.query or {}) or _holds_secret(case.body):
        return True
    return (
        case.path.endswith("/slots")
        and isinstance(case.body, dict)
        and bool(secret_keys(case.body))
    )


def _breaks_a_cross_field_rule(path: str, method: str, body: Any) -> bool:
    if not isinstance(body, dict):
        return False
    if method == "POST" and path.endswith("/facts:batch"):
        items = body.get("items")
        return isinstance(items, list) and any(
            _breaks_a_cross_field_rule("/facts", "POST", item) for item in items
        )
    if method == "POST" and path.endswith("/gate/explain"):
        # the explained write is a facts body: the same rules apply to it
        return _breaks_a_cross_field_rule("/facts", "POST", body.get("fact"))
    start, end = body.get("valid_from"), body.get("valid_to")
    if isinstance(start, str) and isinstance(end, str) and end <= start:
        # valid_to must be after valid_from (same-offset text compares like the times only
        # when both are UTC, so any such pair is left out)
        return True
    if (
        isinstance(start, str)
        and isinstance(end, str)
        and not (start.endswith("Z") and end.endswith("Z"))
    ):
        return True
    if method == "POST" and path.endswith("/admin/webhooks"):
        # a URL refused by its parts (credentials, a fragment, a bad port): 422, see
        # docs/webhooks.md#url-rules-ssrf (the test env allows loopback hosts)
        url = body.get("url")
        return isinstance(url, str) and url_problem(url, require_https=False) is not None
    if method == "POST" and path.endswith("/facts"):
        kind, predicate = body.get("type"), body.get("predicate")
        if kind == "profile" and not predicate:
            return True  # a profile fact needs a predicate
        if kind == "episodic" and predicate:
            return True  # an episodic fact has none
    return False


@schemathesis.hook
def filter_case(context: Any, case: Any) -> bool:
    meta = getattr(case, "meta", None)
    if meta is None or not meta.generation.mode.is_positive:
        return True
    if isinstance(case.query, dict) and case.query.get("cursor"):
        return False  # a cursor is opaque: only next_cursor of a previous page is valid
    if _refused_as_secret(case) or _outside_json_limits(case.body):
        return False
    if case.path.endswith("/admin/import") and (case.query or {}).get("format") == "mem0":
        return False  # the drawn bodies are generic lines (see _IMPORT_LINES)
    return not _breaks_a_cross_field_rule(case.path, case.method.upper(), case.body)
