"""What a matcher finds in a sentence (`Hit`), and the confidence levels a hit may carry."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from app.memory.model import FactType

CONF_EXPLICIT = 0.95
CONF_DIRECT = 0.8  # "call me X", "I'm allergic to X": unambiguous first person
CONF_PLAIN = 0.75  # a clear first-person statement
CONF_IMPLIED = 0.7  # subject left implicit ("不吃猪肉")


@dataclass(frozen=True)
class Hit:
    """One assertion found in a sentence, before it becomes a Candidate."""

    type: FactType
    predicate: str | None
    value: Any
    statement: str
    confidence: float = CONF_PLAIN
    # A standing request said without a "记住/from now on" prefix ("别再…", "don't … anymore",
    # "stop …-ing"): written as an explicit instruction, like "以后别发短信".
    standing: bool = False
    # The clause of its sentence the hit was read in, when the sentence as a whole gave
    # none (app.providers.rules.extractor._clause_hits); the rest of the sentence is then
    # the candidate's context.
    clause: str | None = None
    # said in passing (extract_prefs.Pref.tentative): the gate reads it strictly
    tentative: bool = False


Matcher = Callable[[str], list[Hit]]
# A diet taken up "lately" may be a phase: kept, with less confidence.
RECENT = re.compile(r"最近|这段时间|这阵子|(?i:\b(?:lately|recently|these days)\b)")
CONF_RECENT = 0.6
