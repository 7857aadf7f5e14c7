"""The default extractor: Chinese and English rules over user turns, offline
(docs/extraction.md#extractors).

Precision over recall (docs/extraction.md#modes: automatic extraction is noisy; hypotheticals,
rhetorical questions and the model's own words must never become assertions). Each user turn is
split into sentences; a leading greeting or filler ("你好，", "Hi, ", "好的，") is stripped,
a sentence is then screened (questions, hypotheticals, reported speech, sarcasm, past or
one-off content are dropped), then an explicit-instruction prefix ("记住…", "以后都…",
"remember…", "from now on…") is peeled off, then a table of matchers turns the rest into
(type, predicate, value, statement) hits. A matcher may mark a hit `standing` ("别再…",
"don't … anymore", "stop …-ing"): it is then written as an explicit instruction too.
To extend: add a matcher function to `_MATCHERS` (extractor.py) and a few rows to the unit
test table.
General patterns (response-style requests, first-person preferences, habits, traits and
attributes kept as free statements) live in `extract_prefs` and run after the typed
matchers: see `extract_sentence`.

The modules, in the order a sentence meets them: screening, instructions, then the
matchers of zh, en and bilingual (with their vocabulary and text helpers); hits.py holds
what they return and extractor.py puts it together.
"""

from app.providers.rules.extractor import RuleExtractor, extract_sentence

__all__ = ["RuleExtractor", "extract_sentence"]
