"""`promote.paraphrase_similarity`: the policy knob for counting a repeat in other words."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from app.memory.policy import Policy, effective_policy, override_json_schema

DEFAULTS = yaml.safe_load(
    (Path(__file__).resolve().parents[2] / "config" / "policy.yaml").read_text(encoding="utf-8")
)


def test_default_is_in_the_policy_file() -> None:
    assert DEFAULTS["promote"]["paraphrase_similarity"] == 0.85
    assert effective_policy(DEFAULTS, None).promote.paraphrase_similarity == 0.85
    assert Policy().promote.paraphrase_similarity == 0.85


def test_tenant_override_and_bounds() -> None:
    policy = effective_policy(DEFAULTS, {"promote": {"paraphrase_similarity": 0.9}}, strict=True)
    assert policy.promote.paraphrase_similarity == 0.9
    assert effective_policy(DEFAULTS, {"promote": {"paraphrase_similarity": 1}}, strict=True)
    # below 0.5 every statement of a user would repeat every other one; above 1 nothing can
    for bad in (0.2, 1.5, "high"):
        with pytest.raises(ValidationError):
            effective_policy(DEFAULTS, {"promote": {"paraphrase_similarity": bad}}, strict=True)


def test_override_schema_lists_it() -> None:
    promote = override_json_schema()["properties"]["promote"]["properties"]
    assert promote["paraphrase_similarity"]["minimum"] == 0.5
    assert promote["paraphrase_similarity"]["maximum"] == 1
