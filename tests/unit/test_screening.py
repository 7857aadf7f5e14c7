"""Screening of ids and free text outside statements (app.memory.screening), table-driven."""

from __future__ import annotations

import base64
from urllib.parse import quote

import pytest

from app.memory.screening import identifier_holds_secret, redact_free_text, secret_keys

AWS = "AKIAIOSFODNN7EXAMPLE"
GHP = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"

# (id, identifier, holds a secret?)
IDENTIFIERS: list[tuple[str, str, bool]] = [
    ("uuid_hex", "3f2a9c1e4b5d4e6f8a7b9c0d1e2f3a4b", False),
    ("uuid_dashed", "3f2a9c1e-4b5d-4e6f-8a7b-9c0d1e2f3a4b", False),
    ("turn_number", "sess-42#3", False),
    ("hashed_turn", "h:9f86d081884c7d65", False),
    ("plain_trace", "trace-2026-03-01.agent:planner@v2", False),
    ("word_with_password", "reset-password-flow", False),
    ("aws_key", AWS, True),
    ("aws_key_embedded", f"trace-{AWS}-1", True),
    ("github_token", GHP, True),
    ("password_assignment", "password=hunter2x", True),
    ("password_colon", "pwd:hunter2x", True),
    ("password_dashed", "my-password-is-hunter2x", True),
    ("password_dotted", "password.is.hunter2x", True),
    ("connection_string", "postgres://app:s3cretpw@db.internal:5432/x", True),
    ("private_key_header", "-----BEGIN RSA PRIVATE KEY-----", True),
    ("fullwidth_aws", "ＡＫＩＡＩＯＳＦＯＤＮＮ７ＥＸＡＭＰＬＥ", True),
    ("percent_encoded", quote("password=hunter2x", safe=""), True),
    ("double_percent_encoded", quote(quote("api_key=zz9911aa", safe=""), safe=""), True),
    ("base64_encoded", base64.b64encode(b"password=hunter2x").decode(), True),
    ("base64url_encoded", base64.urlsafe_b64encode(f"id {GHP}".encode()).decode(), True),
]


@pytest.mark.parametrize(
    ("value", "secret"), [c[1:] for c in IDENTIFIERS], ids=[c[0] for c in IDENTIFIERS]
)
def test_identifier_holds_secret(value: str, secret: bool) -> None:
    assert identifier_holds_secret(value) is secret


def test_free_text_redacted_only_when_it_holds_a_secret() -> None:
    plain = "wrong answer, ＦＵＬＬ width kept"
    assert redact_free_text(plain) == plain
    redacted = redact_free_text(f"the key {AWS} leaked, password: hunter2x")
    assert AWS not in redacted and "hunter2x" not in redacted
    assert "[REDACTED:secret]" in redacted


def test_secret_keys_at_any_depth() -> None:
    data = {"city": "Berlin", AWS: 1, "nested": {"list": [{"password=hunter2x": "v"}]}}
    assert secret_keys(data) == [(AWS,), ("nested", "list", "0", "password=hunter2x")]
    assert secret_keys({"a": {"b": [1, "x"]}}) == []
