"""Screening of caller-controlled strings outside statements: identifiers and free text.

The gate screens what becomes a fact; every other string a caller sends that rests
somewhere (trace and turn ids, session ids, slot names, notes, key names, headers) comes
through here first (docs/gate.md#secrets-never-rest). An identifier holding a secret is
refused, because a redacted id would silently join unrelated records; free text is
redacted. The detectors are the gate's (app.memory.detectors). Pure.
"""

from __future__ import annotations

import re
from typing import Any

from app.memory import unmask
from app.memory.detectors import contains_secret, find_secrets, redact
from app.memory.prefilter import rx
from app.memory.text import nfkc

# UUIDs (what memgate and most clients generate): no detector matches one, so skip the work.
_UUID = rx(r"[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}", re.IGNORECASE)
# Separators an id may use where a sentence has spaces ("my-password-is-hunter2").
_ID_SEPARATORS = rx(r"[._:/+-]+")


def _variants(value: str) -> list[str]:
    """The id as written, and with its separators read as spaces; the detectors also read
    each form unmasked (percent-, base64-, hex-encoded ..., app.memory.unmask), and so
    does the spaced form of the unmasked id."""
    forms = [value, _ID_SEPARATORS.sub(" ", value)]
    decoded = unmask.unmasked(nfkc(value))
    if decoded != nfkc(value):
        forms.append(_ID_SEPARATORS.sub(" ", decoded))
    return forms


def identifier_holds_secret(value: str) -> bool:
    """True when an id or header value is, contains or encodes a secret (key, token,
    password, private key, connection string): such an id is refused, never stored."""
    if not value or _UUID.fullmatch(value):
        return False
    return any(find_secrets(form) for form in _variants(value))


def redact_identifier(value: str | None) -> str | None:
    """An identifier an audit row keeps (e.g. a predicate the extractor chose): as given,
    or a marker when it is, contains or encodes a secret, an ID or a card."""
    if not value or _UUID.fullmatch(value):
        return value
    return "[REDACTED:secret]" if any(map(contains_secret, _variants(value))) else value


def redact_free_text(text: str) -> str:
    """Free text (a note, a key name) with secrets, IDs and cards replaced by markers;
    text without any is returned unchanged (not even width-folded)."""
    return redact(text) if contains_secret(text) else text


def secret_keys(data: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Paths of the object keys, at any depth, that hold a secret (slot names and the
    keys nested in slot values are identifiers too)."""
    found: list[tuple[str, ...]] = []
    if isinstance(data, dict):
        for key, value in data.items():
            here = (*path, str(key))
            if identifier_holds_secret(str(key)):
                found.append(here)
            found.extend(secret_keys(value, here))
    elif isinstance(data, list):
        for index, item in enumerate(data):
            found.extend(secret_keys(item, (*path, str(index))))
    return found
