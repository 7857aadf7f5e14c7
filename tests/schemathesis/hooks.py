"""schemathesis hooks: positive cases that break a rule JSON Schema cannot state.

The OpenAPI document says everything a field accepts; a few rules tie fields together
(documented in the models' descriptions and SPEC §3) or need a value only the server
hands out. A generated "valid" case that breaks one is not valid, so it is not sent as a
positive case; negative cases are untouched.
"""

from __future__ import annotations

from typing import Any

import schemathesis


def _breaks_a_cross_field_rule(path: str, method: str, body: Any) -> bool:
    if not isinstance(body, dict):
        return False
    start, end = body.get("valid_from"), body.get("valid_to")
    if isinstance(start, str) and isinstance(end, str) and end <= start:
        # valid_to must be after valid_from (same-offset text compares like the times only
        # when both are UTC, so any such pair is left out)
        return True
    if isinstance(start, str) and isinstance(end, str) and not (
        start.endswith("Z") and end.endswith("Z")
    ):
        return True
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
    return not _breaks_a_cross_field_rule(case.path, case.method.upper(), case.body)
