"""Whose data a text holds (docs/gate.md#reason-codes, `third_party_pii`): the rule that
reads "he"/"she" beside a sensitive word as someone else, and the semantic class's
other-person test. The sentences were written for this test; several come from reviews
(false refusals of the user's own data, and look-alikes that must stay someone else's)."""

from __future__ import annotations

import pytest

from app.memory import detectors
from app.memory.semantic import mentions_other_person


@pytest.mark.parametrize(
    ("text", "other"),
    [
        ("She was hospitalized for pancreatitis", True),
        ("Dana said he was diagnosed with cancer", True),
        ("Dana's mother has cancer", True),
        ("he has been in rehab since June", True),
        # the user's own data: the pronoun speaks, or is the user
        ("She told me I have pancreatitis", False),
        ("My doctor said she thinks it is asthma", False),
        ("The nurse said she would check the insulin dose", False),
        ("User said she is pregnant", False),
        ("The user mentioned he was diagnosed with ADHD", False),
        ("He is my doctor and I have asthma", False),
        # no one's
        ("It's partner pricing on the loan", False),
        ("The bank's partner program offers a lower mortgage rate", False),
        ("He works at the bank as a loan officer", False),
    ],
)
def test_he_or_she_beside_a_sensitive_word(text: str, other: bool) -> None:
    assert bool(detectors.find_third_party_pii(text)) is other, text


@pytest.mark.parametrize(
    ("text", "other"),
    [
        ("I go to a support group and they help me with my anxiety", False),
        ("Caroline: I chose the agency because they help LGBTQ+ folks adopt", False),
        ("It's been hard since my diagnosis", False),
        ("Jordan told me they were just diagnosed with HIV", True),
        ("Caroline: Jordan told me they were diagnosed", True),
        ("I met someone at the clinic, they have HIV", True),
        ("I told my sister they have HIV", True),
        ("Tom said they have HIV and I was shocked", True),
        ("their diagnosis changed everything", True),  # not the user's own words
        ("Anna's diagnosis", True),
        ("Someone's HIV test got mixed up with mine", True),
    ],
)
def test_they_in_the_users_own_words_is_a_group(text: str, other: bool) -> None:
    assert mentions_other_person(text) is other
