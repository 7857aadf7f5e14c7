"""Participants (app/memory/participants.py, docs/gate.md#participants): the user and the
people they share a conversation with are not third parties, and nobody else becomes one
of them. The sentences were written for this test; the refused ones include a review's
findings against the first version (names read as "I" switched the relative checks off,
labels like "My mom:" whitelisted a relative)."""

from __future__ import annotations

import pytest

from app.memory import gate
from app.memory.model import Candidate, FactType, KeyRights, Reason, Role, SourceKind
from app.memory.participants import masked, names_of, person_name
from app.memory.policy import Policy

AGENT = KeyRights(None, Role.AGENT)
POLICY = Policy()


def told(statement: str, *people: str, keys: tuple[str, ...] = ()) -> gate.GateResult | None:
    """A consented document's line through the gate's rules."""
    c = Candidate(
        "u1",
        FactType.EPISODIC,
        statement,
        source_kind=SourceKind.DOCUMENT,
        consent=True,
        keys=keys,
        participants=people,
    )
    return gate.screen(c, AGENT, POLICY, frozenset())


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("Caroline", "Caroline"),
        ("  Mary   Ann ", "Mary Ann"),
        ("Ｄａｎａ", "Dana"),  # full width folds
        ("O'Brien", "O'Brien"),
        ("陈默", "陈默"),
        ("欧阳·娜娜", "欧阳·娜娜"),
        ("My", None),
        ("She", None),
        ("The", None),
        ("A", None),
        ("My mom", None),
        ("Mom", None),
        ("Her mother", None),
        ("Neighbor", None),
        ("caroline", None),  # a name as written: capitalised
        ("Dana2", None),
        ("妈妈", None),
        ("我妈", None),
        ("的", None),
        ("雨", None),  # one character names nobody
        ("小王的", None),
        ("Ann Lee Smith Jones Brown", None),
    ],
)
def test_what_can_name_a_participant(name: str, expected: str | None) -> None:
    assert person_name(name) == expected


def test_labels_name_participants_but_roles_and_relatives_do_not() -> None:
    lines = ["Caroline: hi", "My mom: hello", "妈妈：你好", "Note: x", "林晓: 在吗", "She: ok"]
    assert names_of(["Dana", "My"], lines) == ("Dana", "Caroline", "林晓")


def test_a_participants_own_data_is_theirs() -> None:
    assert told("Dana has diabetes and takes insulin", "Dana") is None
    assert told("Ｄａｎａ has diabetes", "Dana") is None
    assert told("Caroline said she was diagnosed with asthma", "Caroline") is None
    # a consented transcript: the speakers its lines are labelled with
    assert told("Anna: Melanie's birthday party was loud", keys=("Melanie: we had fun",)) is None


@pytest.mark.parametrize(
    ("statement", "people", "keys"),
    [
        # a relative stays someone else beside a participant
        ("Caroline: my mom told Melanie about her cancer", (), ("Melanie: hey",)),
        ("My mom told Dana about her cancer", ("Dana",), ()),
        ("Dana said her father has his cancer treatment on Monday", ("Dana",), ()),
        ("Dana says the doctor told her dad he has cancer", ("Dana",), ()),
        ("Dana's mother has cancer", ("Dana",), ()),
        ("Dana visited her neighbor; she has cancer", ("Dana",), ()),
        ("Dana's brother said he has HIV", ("Dana",), ()),
        ("我妈和李明说自己得了糖尿病", ("李明",), ()),
        ("我姐姐跟陈默说怀孕了", ("陈默",), ()),
        # a label or a listed "name" that is a pronoun or a relative names nobody
        ("my mom has cancer", ("My",), ("My: ok",)),
        ("My mom has cancer", (), ("My mom: hi",)),
        ("her mother has cancer", (), ("Her: ok",)),
        ("我妈的电话是13812345678", ("妈",), ("我妈: 你好",)),
        ("妈妈得了糖尿病", (), ("妈妈：你好",)),
        # a name inside a longer one, or someone else named in the line
        ("Mary Ann's phone is 555-123-4567", ("Ann",), ()),
        ("Dana met Tom, he has HIV", ("Dana",), ()),
        ("Marta has diabetes", ("Dana",), ()),
        # "she" in a line someone speaks is someone else
        ("Luis: she was just diagnosed with diabetes", ("Luis",), ()),
        ("陈默: 她下个月过生日", ("陈默",), ()),
    ],
)
def test_third_parties_stay_third_parties(
    statement: str, people: tuple[str, ...], keys: tuple[str, ...]
) -> None:
    result = told(statement, *people, keys=keys)
    assert result is not None and result.reason is Reason.THIRD_PARTY_PII, result


def test_no_consent_or_another_source_derives_nobody() -> None:
    for c in (
        Candidate(
            "u1",
            FactType.EPISODIC,
            "Anna has HIV",
            source_kind=SourceKind.DOCUMENT,
            keys=("Anna: hi",),
        ),
        Candidate(
            "u1",
            FactType.EPISODIC,
            "Anna has HIV",
            source_kind=SourceKind.USER_MESSAGE,
            consent=True,
            keys=("Anna: hi",),
        ),
    ):
        assert gate.participants_of(c) == ()
        result = gate.screen(c, AGENT, POLICY, frozenset())
        assert result is not None and result.reason is Reason.THIRD_PARTY_PII, result


def test_the_semantic_other_person_test_reads_participants_as_the_user() -> None:
    people = ("Caroline", "Melanie")
    # a line about a participant: her pronouns are hers
    assert "her" not in masked("Caroline painted her journey.", people)
    # a relative, someone else named, or a spoken line keep their words
    assert "mother" in masked("Caroline and her mother", people)
    assert "she" in masked("Caroline met Jordan, she is ill", people)
    assert "they" in masked("Caroline: Jordan told me they were diagnosed", people)
    assert "she" in masked("Caroline: she was diagnosed", people)


@pytest.mark.parametrize(
    ("text", "other"),
    [
        ("I go to a support group and they help me with my anxiety", False),
        ("I chose the agency because they help LGBTQ+ folks adopt", False),
        ("It's been hard since my diagnosis", False),  # "It's" is nobody
        ("Jordan told me they were just diagnosed with HIV", True),  # someone named
        ("I told my sister they have HIV", True),  # a relative
        ("their diagnosis changed everything", True),  # not the user's own words
        ("Anna's diagnosis", True),
    ],
)
def test_they_in_the_users_own_words_is_a_group(text: str, other: bool) -> None:
    from app.memory.semantic import mentions_other_person

    assert mentions_other_person(text) is other
