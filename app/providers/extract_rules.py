"""The rule extractor's former module, kept as a thin re-export for the code (tests, evals)
that imports it from here: the rules live in app/providers/rules/."""

from app.memory.text import split_sentences
from app.providers.rules import RuleExtractor

__all__ = ["RuleExtractor", "split_sentences"]
