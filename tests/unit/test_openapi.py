"""openapi/openapi.json is the contract users read: it must match the code."""

from pathlib import Path

from app.openapi import document


def test_openapi_document_is_up_to_date() -> None:
    path = Path(__file__).resolve().parents[2] / "openapi" / "openapi.json"
    assert path.read_text(encoding="utf-8") == document(), "run `make openapi`"
