"""The SDK's generated modules and error classes against the service (no HTTP, no server).

- `make sdk` regenerated into a temporary directory gives exactly the checked-in
  models.py (from openapi/openapi.json) and _sync_client.py (from _async_client.py);
- every error `code` the service can answer has its own exception class.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from memgate_client import ERRORS, MemgateError

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "clients" / "python" / "memgate_client"


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sdk")
    subprocess.run(
        [sys.executable, str(ROOT / "clients" / "python" / "generate.py"), "--out", str(out)],
        check=True,
    )
    return out


@pytest.mark.parametrize("name", ["models.py", "_sync_client.py"])
def test_generated_files_match(regenerated: Path, name: str) -> None:
    fresh = (regenerated / name).read_text()
    assert fresh == (PACKAGE / name).read_text(), f"{name} drifted: run `make sdk`"


def test_models_cover_every_schema() -> None:
    from memgate_client import models

    schemas = json.loads((ROOT / "openapi" / "openapi.json").read_text())["components"]["schemas"]
    missing = [name for name in schemas if not hasattr(models, name)]
    assert missing == []


def _server_codes() -> set[str]:
    """Every code app/errors.py can put in an envelope, and every one openapi.json declares."""
    from app import errors

    codes = {"method_not_allowed", "internal"} | set(errors._STATUS_CODES.values())
    stack: list[type[errors.MemgateError]] = [errors.MemgateError]
    while stack:
        cls = stack.pop()
        codes.add(cls.code)
        stack.extend(cls.__subclasses__())
    doc = json.loads((ROOT / "openapi" / "openapi.json").read_text())
    for ops in doc["paths"].values():
        for op in ops.values():
            for answer in op.get("responses", {}).values():
                described = re.fullmatch(r"error: ([a-z_]+(?:, [a-z_]+)*)", answer["description"])
                if described:
                    codes |= {c.strip() for c in described.group(1).split(",")}
    return codes


def test_one_exception_class_per_server_code() -> None:
    codes = _server_codes()
    assert {"not_found", "rate_limited", "overloaded", "secret_in_identifier"} <= codes
    # "error" is the fallback for a status the server has no code for: the base class
    missing = sorted(c for c in codes - {"error"} if c not in ERRORS)
    assert missing == [], f"no exception class for {missing}"
    for code, cls in ERRORS.items():
        assert issubclass(cls, MemgateError) and cls is not MemgateError and cls.code == code
    assert len(set(ERRORS.values())) == len(ERRORS)
