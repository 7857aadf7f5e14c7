"""Participants (docs/gate.md#participants): the user and the people they share a
conversation with, who are not third parties to the write gate.

Pure and conservative. A name counts only as written (case and width folded by NFKC,
never matched inside a longer name), and it only ever clears what is anchored on it:

- a rule finding that names the participant as the person whose data it is ("Dana's
  phone", "Dana has diabetes"), or that rests on "he"/"she" in a line about a participant
  (it starts with their name) where nobody else is named;
- for the semantic `personal` class, the participant's name and, in a line about them,
  the pronouns that refer to them.

A relative, a friend, a name not in the list, or "she" in a line someone speaks
("Luis: she was just diagnosed") stays someone else's, always.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from app.memory.text import SPEAKER_LABEL, nfkc

MAX_PARTICIPANTS = 8
MAX_NAME = 64

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
# what a name never is: pronouns, articles, determiners, the roles of a chat
_NOT_NAMES_EN = frozenset(
    "i me my mine myself you your yours he him his she her hers they them their theirs we us "
    "our ours it its a an the this that these those who whom whose someone somebody "
    "everyone everybody nobody user assistant system bot agent note".split()
)
_NOT_NAMES_ZH = re.compile(r"[我你您他她它的们咱俺]")
_KIN_EN = re.compile(
    r"\b(?:mom|mother|mum|mama|dad|father|papa|parents?|wife|husband|spouse|partner|sons?|"
    r"daughters?|kids?|child(?:ren)?|brothers?|sisters?|siblings?|grand\w*|uncle|aunt|"
    r"cousin|niece|nephew|boss|manager|colleague|co-?worker|friends?|neighbou?r|roommate|"
    r"flatmate|girlfriend|boyfriend|fianc\w*|in-laws?|\w+-in-law|classmate|teammate|"
    r"landlord|ex|step\w*|doctor|dr|nurse|patient|client|customer)\b",
    re.IGNORECASE,
)
_KIN_ZH = re.compile(
    r"妈|爸|母|父|老婆|妻|太太|老公|丈夫|爱人|媳妇|儿|女儿|孩子|宝宝|哥|弟|姐|妹|爷|奶|外公|外婆|姥|"
    r"叔|阿姨|舅|姑|表|堂|岳|公公|婆婆|男朋友|女朋友|男友|女友|对象|室友|邻居|同学|同事|朋友|老板|"
    r"领导|上司|经理|客户|家人|亲戚|前夫|前妻|前任|闺蜜|医生|大夫|护士|患者|病人"
)
_LATIN_WORD = re.compile(r"[A-Z][^\W\d_]*(?:[.'’-][^\W\d_]+)*\.?")
_CJK_NAME = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]{2,}(?:·[\u3400-\u9fff]{1,8})*")


def person_name(name: str) -> str | None:
    """`name` as a participant (NFKC-folded, trimmed, spaces collapsed), or None when it
    cannot name one: a Chinese name of two characters or more with no pronoun, 的 or
    kinship word in it; or one to four capitalised words, none a pronoun, article or
    kinship word ("My", "The", "My mom", "妈妈", "的" are no names)."""
    folded = " ".join(nfkc(name).split())
    if not folded or len(folded) > MAX_NAME:
        return None
    if _CJK.search(folded):
        ok = _CJK_NAME.fullmatch(folded) is not None
        return (
            folded
            if ok and not _NOT_NAMES_ZH.search(folded) and not _KIN_ZH.search(folded)
            else None
        )
    words = folded.split(" ")
    if not 1 <= len(words) <= 4 or not all(_LATIN_WORD.fullmatch(w) for w in words):
        return None
    if any(w.casefold().rstrip(".") in _NOT_NAMES_EN for w in words) or _KIN_EN.search(folded):
        return None
    return folded


def names_of(listed: Sequence[str], labels: Sequence[str] = ()) -> tuple[str, ...]:
    """The valid names among `listed` and the speaker labels of `labels` (lines)."""
    out: dict[str, None] = {}
    for raw in listed:
        name = person_name(raw)
        if name is not None:
            out.setdefault(name, None)
    for line in labels:
        m = SPEAKER_LABEL.match(nfkc(line))
        name = person_name(m.group(1)) if m else None
        if name is not None:
            out.setdefault(name, None)
    return tuple(out)


_BEFORE_CAPITAL = re.compile(r"[A-Z][a-z]+\s+$")
_AFTER_CAPITAL = re.compile(r"\s+[A-Z][a-z]")
_POSSESSIVE = re.compile(r"'s|’s|的")


def spans(name: str, text: str) -> list[tuple[int, int]]:
    """Where `name` stands in `text` as a whole name, with its possessive: never inside a
    word, and (Latin) never beside another capitalised word, which would make it part of
    a longer name ("Mary Ann", "Ann Lee")."""
    out = []
    cjk = _CJK.search(name) is not None
    for m in re.finditer(re.escape(name), text):
        start, end = m.span()
        if not cjk:
            before, after = text[max(0, start - 40) : start], text[end : end + 4]
            if before[-1:].isalnum() or before[-1:] in ("-", "'", "’", "."):
                continue
            if (after[:1].isalnum() or after[:1] == "-") or _BEFORE_CAPITAL.search(before):
                continue
            if _AFTER_CAPITAL.match(after):
                continue
        own = _POSSESSIVE.match(text, end)
        out.append((start, own.end() if own else end))
    return out


def _lines(text: str) -> list[tuple[int, str]]:
    """(offset, line body) per line, a speaker's label left out."""
    out = []
    at = 0
    for line in text.split("\n"):
        m = SPEAKER_LABEL.match(line)
        skip = m.end() if m else 0
        out.append((at + skip, line[skip:]))
        at += len(line) + 1
    return out


def _about(body: str, names: Sequence[str]) -> bool:
    """The line is about a participant: it starts with their name."""
    lead = len(body) - len(body.lstrip())
    return any(s[0] == lead for n in names for s in spans(n, body)[:1])


_CAPITALISED = re.compile(r"\b[A-Z][a-z]+\b")


# Words that start sentences without naming anyone (a capitalised word elsewhere, or any
# other word starting a sentence, may be a name nobody listed)
_COMMON_STARTS = frozenset(
    "the a an it its this that these those there here we i you he she they my our your his "
    "her their what when where why how who which yes no oh hey hi hello thanks thank well so "
    "but and or also then now today tonight yesterday tomorrow last next recently sometimes "
    "since after before if because just really wow sure yeah okay ok great sounds glad sorry "
    "please let lately finally anyway actually maybe not every all some most many one two "
    "still even once while during as at in on for with from by to of about over after "
    "being having getting going doing".split()
)


def nobody_else(body: str, names: Sequence[str]) -> bool:
    """Nobody else in the text who "he", "she" or "they" could be: no relative or
    acquaintance ("her brother", "邻居") and no capitalised word but the participants'
    names and common words starting a sentence (a name nobody listed)."""
    rest = _blank(body, names)
    if _KIN_EN.search(rest) or _KIN_ZH.search(rest):
        return False
    for m in _CAPITALISED.finditer(rest):
        i = m.start() - 1
        while i >= 0 and rest[i].isspace():
            i -= 1
        starts = i < 0 or rest[i] in ".!?。！？:"
        if not (starts and m.group(0).casefold() in _COMMON_STARTS):
            return False
    return True


def _blank(text: str, names: Sequence[str]) -> str:
    """`text` with every occurrence of the names (and their possessive) as spaces."""
    chars = list(text)
    for n in names:
        for start, end in spans(n, text):
            chars[start:end] = " " * (end - start)
    return "".join(chars)


def anchored_on_participant(
    text: str, start: int, end: int, detail: str, names: Sequence[str]
) -> bool:
    """Whether a third-party finding at [start, end) of `text` (NFKC-folded, the
    detectors' positions) is about a participant: a named-person rule whose name is one,
    or the pronoun rule ("she" beside a sensitive word) in a line about a participant
    where nobody else is named. Relatives and everyone else: never."""
    if not names:
        return False
    span = text[start:end]
    if detail in ("named_person_pii_en", "named_person_health_en"):
        return any(sp[0] == start for n in names for sp in spans(n, text))
    if detail == "relative_sensitive" and _PRONOUN.match(span):
        for offset, body in _lines(text):
            if offset <= start <= offset + len(body):
                return _about(body, names) and nobody_else(body, names)
    return False


_PRONOUN = re.compile(r"(?:he|she)\b", re.IGNORECASE)
_THIRD_PERSON = re.compile(r"\b(?:he|she|him|his|her|hers|they|them|their|theirs)\b", re.IGNORECASE)
_THIRD_PERSON_ZH = re.compile(r"(?:他|她)(?!们)")


def masked(text: str, names: Sequence[str]) -> str:
    """`text` with the participants' names (and their possessive) blanked, and in a line
    about a participant where nobody else is named, the third-person pronouns too: what
    the semantic class's other-person test reads (app.memory.semantic). Relatives and
    other people's words are left as they are."""
    if not names:
        return text
    out = []
    for line in text.split("\n"):
        m = SPEAKER_LABEL.match(line)
        head, body = (line[: m.end()], line[m.end() :]) if m else ("", line)
        about = _about(body, names) and nobody_else(body, names)
        body = _blank(body, names)
        if about:
            body = _THIRD_PERSON_ZH.sub(" ", _THIRD_PERSON.sub(" ", body))
        out.append(head + body)
    return "\n".join(out)
