"""Screening of caller-controlled strings outside statements: identifiers and free text.

The gate screens what becomes a fact; every other string a caller sends that rests
somewhere (trace and turn ids, session ids, slot names, notes, key names, headers) comes
through here first (SPEC §12 "Secrets never rest"). An identifier holding a secret is
refused, because a redacted id would silently join unrelated records; free text is
redacted. The detectors are the gate's (app.memory.detectors). Pure.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote

from app.memory.detectors import contains_secret, find_secrets, redact

# UUIDs (what memgate and most clients generate): no detector matches one, so skip the work.
_UUID = re.compile(r"[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}",
                   re.IGNORECASE)
# Separators an id may use where a sentence has spaces ("my-password-is-hunter2").
_ID_SEPARATORS = re.compile(r"[._:/+-]+")
_BASE64 = re.compile(r"[A-Za-z0-9+/_-]{16,}={0,2}")


def _decoded(value: str) -> Iterator[str]:
    """The readable forms an id may hide a secret in: percent- and base64-encoded."""
    if "%" in value:
        once = unquote(value)
        yield once
        if "%" in once:
            yield unquote(once)
    if _BASE64.fullmatch(value):
        padded = value + "=" * (-len(value) % 4)
        for decode in (base64.b64decode, base64.urlsafe_b64decode):
            try:
                text = decode(padded).decode("utf-8")
            except (binascii.Error, ValueError):
                continue
            if text.isprintable():
                yield text
                break


def _variants(value: str) -> Iterator[str]:
    yield value
    for form in (value, *_decoded(value)):
        if form is not value:
            yield form
        spaced = _ID_SEPARATORS.sub(" ", form)
        if spaced != form:
            yield spaced


def identifier_holds_secret(value: str) -> bool:
    """True when an id or header value is, contains or encodes a secret (key, token,
    password, private key, connection string): such an id is refused, never stored."""
    if not value or _UUID.fullmatch(value):
        return False
    return any(find_secrets(form) for form in _variants(value))


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
