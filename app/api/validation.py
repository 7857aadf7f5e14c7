"""The one validation layer for caller input: text, numbers, dates and JSON bodies.

Every request model and path/query parameter is built from the types here, and
`app.api.guard` checks every JSON body, path, query string and header with
`check_json` / `check_text` before anything parses or stores it. The limits (README
"Input limits"):

- text: valid UTF-8, no U+0000, no lone surrogates; every string has a length cap;
- ids (user, session): 1–128 of [A-Za-z0-9_.:@-], never only dots (no `.`/`..` segment);
- integers in JSON bodies: signed 64-bit (-2^63 .. 2^63-1); floats finite (no NaN/Infinity);
- JSON nesting at most MAX_JSON_DEPTH levels;
- dates: ISO-8601 with a time zone (RFC 3339), years MIN_YEAR..MAX_YEAR as written.
"""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import AfterValidator, AwareDatetime, BeforeValidator, Field, WithJsonSchema

MAX_JSON_DEPTH = 32
INT_MIN = -(2**63)
INT_MAX = 2**63 - 1
MIN_YEAR = 1900
MAX_YEAR = 8999  # headroom: a TTL of 100 years after any valid_from stays representable
MAX_ID = 128

# No NUL: documented in the OpenAPI schema of every free-text field (Rust and Python
# regex engines both read \x00).
NO_NUL = r"^[^\x00]*$"
# Not blank either: at least one character that is not NUL and not whitespace (as str.strip
# sees whitespace).
_SPACE = r"\t\n\x0b\x0c\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
NOT_BLANK = rf"^[^\x00]*[^\x00{_SPACE}][^\x00]*$"
# An id never consists of dots alone, so it can never be a `.` or `..` path segment.
ID = r"^[A-Za-z0-9_.:@-]*[A-Za-z0-9_:@-][A-Za-z0-9_.:@-]*$"
# RFC 3339 with an explicit offset, years MIN_YEAR..MAX_YEAR; no unix timestamps.
DATE_TIME = (
    r"^(19[0-9]{2}|[2-8][0-9]{3})-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"
    r"T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,6})?"
    r"(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$"
)
_DATE_TIME = re.compile(DATE_TIME)


class InputError(ValueError):
    """Input that no route may see; `where` names the place (for the error's details)."""

    def __init__(self, message: str, where: list[str]) -> None:
        super().__init__(message)
        self.message = message
        self.where = where


def text_problem(value: str) -> str | None:
    """Why a string may not be stored (None when it may)."""
    if "\x00" in value:
        return "text must not contain U+0000"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "text must be valid UTF-8 (no lone surrogates)"
    return None


def _clean_text(value: str) -> str:
    problem = text_problem(value)
    if problem:
        raise ValueError(problem)
    return value


def _text(max_length: int, min_length: int = 0) -> Any:
    return Field(min_length=min_length, max_length=max_length, pattern=NO_NUL)


def _sized(max_length: int, min_length: int = 0, pattern: str = NO_NUL) -> Any:
    """A cap that is a size limit, answered 413 by the route (docs/api.md#size-limits): the schema
    documents it, the route checks it."""
    return Field(
        min_length=min_length, pattern=pattern, json_schema_extra={"maxLength": max_length}
    )


_Clean = AfterValidator(_clean_text)
# Free text, each with its cap (characters): no NUL, valid UTF-8.
Label = Annotated[str, _text(200), _Clean]  # trace ids, turn ids, names, model names
RequiredLabel = Annotated[str, _text(200, 1), _Clean]
Note = Annotated[str, _text(1000), _Clean]
Evidence = Annotated[str, _text(2000), _Clean]
SearchKey = Annotated[str, _text(500, 1), _Clean]  # a fact's search key (FactIn.keys)
MAX_KEYS = 8
QueryText = Annotated[str, _text(2000, 1), _Clean]
MAX_STATEMENT = 500
MAX_CONTENT_BYTES = 16 * 1024
Statement = Annotated[str, _sized(MAX_STATEMENT, 1, NOT_BLANK), _Clean]
Content = Annotated[str, _sized(MAX_CONTENT_BYTES), _Clean]


def _json_int(value: Any) -> Any:
    """JSON integers only: 3 and 3.0 (the same number in JSON), never true or "3"."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("expected a JSON integer")
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError("expected a JSON integer")
        return int(value)
    return value


# The last annotation of an integer field of a body, after its bounds:
# `Annotated[int, Field(ge=1, le=50), JSON_INT]`; lax pydantic ints would take true and "3".
JSON_INT = BeforeValidator(_json_int)

Id = Annotated[str, Field(min_length=1, max_length=MAX_ID, pattern=ID)]


def _iso_datetime(value: Any) -> Any:
    """Only RFC 3339 text with a zone: `0.5` or `1700000000` is not a time here."""
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str) or not _DATE_TIME.fullmatch(value):
        raise ValueError(
            f"expected an ISO-8601 date-time with a time zone, years {MIN_YEAR}-{MAX_YEAR}"
        )
    return value


def _in_range(value: datetime) -> datetime:
    if not MIN_YEAR <= value.year <= MAX_YEAR:
        raise ValueError(f"date-time outside years {MIN_YEAR}-{MAX_YEAR}")
    return value.astimezone(UTC)


DateTime = Annotated[
    AwareDatetime,
    BeforeValidator(_iso_datetime),
    AfterValidator(_in_range),
    WithJsonSchema({"type": "string", "format": "date-time", "pattern": DATE_TIME}),
]


# ------------------------------------------------------------------------- JSON bodies


def _reject_constant(name: str) -> Any:
    raise InputError(f"{name} is not JSON", ["body"])


def _parse_int(text: str) -> int:
    # a 64-bit int has at most 19 digits (and a sign); longer literals are refused before
    # int() (which refuses over 4300 digits with a plain ValueError)
    if len(text.lstrip("-")) > 19:
        raise InputError("integer outside the signed 64-bit range", ["body"])
    value = int(text)
    if not INT_MIN <= value <= INT_MAX:
        raise InputError("integer outside the signed 64-bit range", ["body"])
    return value


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise InputError("number too large for a double", ["body"])
    return value


def parse_json(raw: bytes) -> Any:
    """Parse a body strictly: UTF-8, no NaN/Infinity, 64-bit ints, finite floats, then
    `check_json`. FastAPI parses again with json.loads, which then sees the same value."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError("body is not valid UTF-8", ["body"]) from exc
    try:
        value = json.loads(
            text,
            parse_constant=_reject_constant,
            parse_int=_parse_int,
            parse_float=_parse_float,
        )
    except RecursionError as exc:
        raise InputError(f"JSON nested deeper than {MAX_JSON_DEPTH}", ["body"]) from exc
    except json.JSONDecodeError as exc:
        raise InputError("malformed JSON body", ["body"]) from exc
    check_json(value)
    return value


def check_json(value: Any, where: list[str] | None = None) -> None:
    """Depth, text and numbers of a parsed JSON value, keys included (iterative)."""
    stack: list[tuple[Any, int, list[str]]] = [(value, 1, where or ["body"])]
    while stack:
        item, depth, loc = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise InputError(f"JSON nested deeper than {MAX_JSON_DEPTH}", loc[:MAX_JSON_DEPTH])
        if isinstance(item, str):
            problem = text_problem(item)
            if problem:
                raise InputError(problem, loc)
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, int):
            if not INT_MIN <= item <= INT_MAX:
                raise InputError("integer outside the signed 64-bit range", loc)
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise InputError("NaN and Infinity are not JSON", loc)
        elif isinstance(item, dict):
            for key, child in item.items():
                problem = text_problem(str(key))
                if problem:
                    raise InputError(f"key: {problem}", loc)
                stack.append((child, depth + 1, [*loc, str(key)[:64]]))
        elif isinstance(item, list):
            stack.extend((child, depth + 1, [*loc, str(i)]) for i, child in enumerate(item))
