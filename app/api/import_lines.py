"""The lines of an import (docs/api.md#bulk-import), read and validated one by one: shared
by `POST /v1/admin/import` and `python -m app.cli import-mem0`."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson
from pydantic import ValidationError

from app.api.facts import MAX_STATEMENT, MAX_VALUE_BYTES, candidate_from
from app.api.schemas.imports import ImportLine, Mem0Memory
from app.api.validation import InputError, parse_json
from app.errors import InvalidRequest, PayloadTooLarge, SecretInIdentifier
from app.importer import IMPORT_MAX_ITEMS, ImportItem
from app.memory.imports import MEM0, from_mem0, mem0_records
from app.memory.imports import Mem0Memory as Mem0Fields
from app.memory.model import Origin, SourceKind

MAX_REPORTED_ERRORS = 100  # malformed lines listed in a 422, at most


def _when(value: str | None) -> datetime | None:
    """mem0's times (ISO 8601, usually with an offset; naive ones are read as UTC)."""
    if not value:
        return None
    parsed = datetime.fromisoformat(value)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _item(fmt: str, line: int, doc: Any) -> ImportItem:
    """One line's item, validated (pydantic's error, or ValueError, when it is not)."""
    if fmt == MEM0:
        m = Mem0Memory.model_validate(doc)
        fields = Mem0Fields(
            id=m.id,
            memory=m.memory,
            user_id=m.user_id,
            hash=m.hash,
            created_at=_when(m.created_at),
            updated_at=_when(m.updated_at),
        )
        return ImportItem(line, m.id, from_mem0(fields))
    body = ImportLine.model_validate(doc)
    c = candidate_from(body, body.user_id, Origin.IMPORTED)
    if body.source is None:
        c.source_kind = SourceKind.IMPORTED
        c.turn_id = body.id
    return ImportItem(line, body.id, c)


def _line_errors(line: int, exc: Exception) -> list[dict[str, Any]]:
    if isinstance(exc, ValidationError):
        return [
            {
                "loc": ["body", "line", line, *e["loc"]],
                "msg": e["msg"],
                "type": e["type"],
            }
            for e in exc.errors(include_input=False, include_url=False)
        ]
    if isinstance(exc, InputError):
        return [{"loc": ["body", "line", line], "msg": exc.message, "type": "json_invalid"}]
    return [{"loc": ["body", "line", line], "msg": str(exc), "type": "value_error"}]


def _too_long(item: ImportItem) -> str | None:
    c = item.candidate
    if len(c.statement) > MAX_STATEMENT:
        return f"statement over {MAX_STATEMENT} characters"
    if len(orjson.dumps(c.value)) > MAX_VALUE_BYTES:
        return f"value over {MAX_VALUE_BYTES} bytes as JSON"
    return None


class ItemReader:
    """The items of an upload, line by line: each line parsed strictly and validated;
    `items()` raises 422 naming the malformed lines (the first 100), or 413 over the cap.
    The CLI (`app.cli import-mem0`) reads its file with it too."""

    def __init__(self, fmt: str) -> None:
        self.fmt = fmt
        self.found: list[ImportItem] = []
        self.errors: list[dict[str, Any]] = []

    def add(self, number: int, raw: bytes) -> None:
        if not raw.strip():
            return
        try:
            doc = parse_json(raw)
            records = mem0_records(doc) if self.fmt == MEM0 else None
            for sub in records if records is not None else [doc]:
                item = _item(self.fmt, number, sub)
                problem = _too_long(item)
                if problem:
                    raise ValueError(problem)
                self.found.append(item)
        except (ValidationError, InputError, ValueError) as exc:
            self.errors.extend(_line_errors(number, exc))
        if len(self.found) > IMPORT_MAX_ITEMS:
            raise PayloadTooLarge(
                f"at most {IMPORT_MAX_ITEMS} items per import", {"max_items": IMPORT_MAX_ITEMS}
            )

    def items(self) -> list[ImportItem]:
        errors = self.errors
        if errors:
            details = {"fields": errors[:MAX_REPORTED_ERRORS], "errors": len(errors)}
            if any(e["type"] == SecretInIdentifier.code for e in errors):
                raise SecretInIdentifier("a line holds a secret in an identifier", details)
            lines = sorted({e["loc"][2] for e in errors})
            raise InvalidRequest(
                f"malformed lines: {lines[:20]}", {**details, "lines": lines[:100]}
            )
        if not self.found:
            raise InvalidRequest("the import holds no items", {"fields": [{"loc": ["body"]}]})
        return self.found
