"""Round 5 of the identifier, secret and disguise detectors (docs/gate.md#detectors): one
test per behaviour changed, with texts other than the probes' (tests/unit/
test_gate_probes_r5.py), and every new pattern fed adversarial input."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.memory import detectors, gate
from app.memory.model import Candidate, FactType, KeyRights, Reason, Role, SourceKind
from app.memory.policy import Policy

POLICY_FILE = Path(__file__).resolve().parents[2] / "config" / "policy.yaml"
POLICY = Policy.model_validate(yaml.safe_load(POLICY_FILE.read_text(encoding="utf-8")))
AGENT = KeyRights(key_id=uuid.uuid4(), role=Role.AGENT)
S, ID, CARD, INJ = (
    Reason.SECRET_DETECTED,
    Reason.GOVERNMENT_ID,
    Reason.PAYMENT_CARD,
    Reason.PROMPT_INJECTION,
)


def _screen(statement: str = "The user keeps a note", value: Any = None) -> Reason | None:
    c = Candidate(
        user_id="u1",
        type=FactType.SEMANTIC,
        source_kind=SourceKind.USER_MESSAGE,
        statement=statement,
        value=value,
    )
    result = gate.screen(c, AGENT, POLICY, ())
    return result.reason if result else None


def _reasons(text: str) -> set[Reason]:
    return {f.reason for f in detectors.screen(text) if f.reason is not None}


# ---------------------------------------------------------------------------------------
# Cards are not read as an Aadhaar by their first twelve digits
# ---------------------------------------------------------------------------------------

# Luhn-valid cards whose first three groups of four happen to pass Aadhaar's Verhoeff check
CARDS_WITH_AN_AADHAAR_HEAD = ["4930 3642 6212 9973", "5164-0562-2415-4990", "4247 2019 8603 9542"]


@pytest.mark.parametrize("card", CARDS_WITH_AN_AADHAAR_HEAD)
def test_a_card_in_groups_of_four_is_a_card_not_an_aadhaar(card: str) -> None:
    text = f"paid with {card} last week"
    assert detectors.find_ids(text) == []
    assert _screen(text) is CARD
    assert detectors.redact(text) == "paid with [REDACTED:card] last week"


def test_an_aadhaar_standing_alone_is_still_one() -> None:
    assert [f.detail for f in detectors.find_ids("Aadhaar 4930 3642 6212")] == ["in_aadhaar"]
    assert [f.detail for f in detectors.find_ids("my number: 4930-3642-6212.")] == ["in_aadhaar"]


# ---------------------------------------------------------------------------------------
# Numbers and secrets split across a list or several fields
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (["4930", "3642", "6212", "9973"], CARD),
        (["110108", "19770823", "0041"], ID),
    ],
    ids=["card", "resident_id"],
)
def test_a_list_pasted_as_text_is_read_as_one_number(value: list[str], reason: Reason) -> None:
    for text in (json.dumps({"n": value}), str(value)):  # JSON, and a Python list's repr
        assert reason in _reasons(text), text
        out = detectors.redact(text)
        assert not any(group in out for group in value), out


def test_a_number_typed_into_several_fields_is_one_number() -> None:
    assert _screen(value={"card": {"part_a": "49303642", "part_b": "62129973"}}) is CARD
    assert _screen(value={"id": {"a": "110108", "b": "19770823", "c": "0041"}}) is ID
    # fields that are not all digits, or digits that check nothing, are left alone
    assert _screen(value={"size": {"width": 1920, "height": 1080}}) is None
    assert _screen(value={"room": {"floor": "12", "wing": "B", "no": "1204"}}) is None
    assert "62129973" in gate.value_text({"part_a": "49303642", "part_b": "62129973"})


def test_a_vendor_secret_split_across_a_list_is_joined() -> None:
    pieces = ["ghp_", "Zq7vW2xkR9", "mN4bT8yLc1", "pQ6sD3fG5h", "jK0a"]
    assert _screen(value={"tokens": pieces}) is S
    text = json.dumps({"ci": pieces})
    assert S in _reasons(text)
    assert detectors.redact(text) == '{"ci": [REDACTED:secret]}'


def test_pieces_under_a_credential_key_are_joined() -> None:
    assert _screen(value={"db_password": ["hun", "ter", "22x"]}) is S


def test_lists_of_ids_and_tags_are_not_joined() -> None:
    videos = ["dQw4w9WgXcQ", "9bZkp7q19f0", "kJQP7kiw5Fk"]
    assert _screen(value={"favourite_videos": videos}) is None
    assert detectors.find_secrets(json.dumps({"favourite_videos": videos})) == []
    assert _screen(value={"tags": ["python", "rust", "go"]}) is None


# ---------------------------------------------------------------------------------------
# Every new pattern stays linear on crafted input
# ---------------------------------------------------------------------------------------

ADVERSARIAL = [
    "a1 " * 2000,
    "全都" * 2500,
    "4111 " * 1000,
    "4111." * 1250,
    "1-" * 2500,
    '["1", ' * 800,
    '["ab", ' * 800,
    "[" + '"x1",' * 1200,
    "密码" * 2500,
    "password " * 600,
    "pass is " * 600,
    "wifi key " * 600,
    "code sent " * 500,
    "p a s s " * 1000,
    "p a s s  " * 800,
    "密 码 " * 1200,
    "AB 12 34 56 " * 400,
    "Ab1 " * 1250,
    "![a][1] " * 600,
    "[1]: https://e.example/?q= " * 180,
    "1gn0r3 45 " * 500,
    "send memories to " * 280,
    "把记忆发送到" * 800,
    "！a" * 2500,
    "密码是全角的 " * 700,
]


@pytest.mark.parametrize("text", [pytest.param(t, id=f"adv{i}") for i, t in enumerate(ADVERSARIAL)])
def test_detectors_stay_fast_on_crafted_input(text: str) -> None:
    text = text[:5000]
    start = time.perf_counter()
    detectors.screen(text)
    detectors.redact(text)
    gate.value_text({"k": text.split()[:64], "f": dict.fromkeys(text.split()[:32], "1234")})
    assert time.perf_counter() - start < 0.5
