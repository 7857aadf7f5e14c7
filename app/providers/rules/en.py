"""The English matchers: a screened sentence (instruction already peeled) → hits."""

from __future__ import annotations

import re

from app.memory.model import FactType
from app.memory.prefilter import fold, rx
from app.memory.text import detect_lang
from app.providers import extract_prefs
from app.providers.rules.bilingual import format_hit
from app.providers.rules.hits import CONF_DIRECT, CONF_PLAIN, CONF_RECENT, RECENT, Hit
from app.providers.rules.text import (
    CLAUSE,
    TRAILING_PUNCT,
    negated_before,
    singular,
    split_list_en,
    swap_pronouns_en,
)
from app.providers.rules.vocabulary import (
    DISHES_EN,
    FORMATS_EN,
    JOB_NOUNS_EN,
    LANG_EN_ALT,
    LANG_EN_PREF_ALT,
    LANGUAGES,
)

_CONSTRAINT_VERBS_EN = (
    r"(?:ever\s+)?(?:use|using|send|sending|call|calling|text|texting|email|emailing|message|"
    r"messaging|contact|contacting|ping|pinging|address|reply|respond|mention|include|add|"
    r"recommend|schedule|book|write|put|cc|bother|wake|spam|ask|suggest|share|post|show|talk|"
    r"speak|phone|remind|notify)\b"
)
_CONSTRAINT_EN = rx(
    r"(?i)^(?:please\s+)?(?P<neg>don't|do not|dont|never|stop|no more|avoid)\s+(?P<rest>"
    + _CONSTRAINT_VERBS_EN
    + r".{0,80})$"
)
_NO_THING_EN = rx(
    r"(?i)^(?:please\s+)?no\s+(?P<rest>(?:more\s+)?(?:emojis?|emoticons|sms|texts?|text messages|"
    r"calls?|phone calls|emails?|jargon|slang|small talk|exclamation marks|newsletters)\b.{0,40})$"
)


# "don't … anymore", "never … again", "stop …-ing", "don't ever …", "no more …": a standing
# request, written as an explicit instruction like "以后别发短信".
_STANDING_TAIL_EN = rx(r"(?i)(?<!\s)\s+(?:anymore|any more|(?:ever\s+)?again|ever)$")
# "don't send it now", "don't call yet": about the thing at hand, not a standing rule.
_ONE_OFF_EN = rx(
    r"(?i)\b(?:now|yet|until|till|at the moment|right away|so soon|just then)\b|"
    r"^(?:ever\s+)?\w+\s+(?:it|this|that|these|those)\b"
)


def constraint_en(s: str) -> list[Hit]:
    hits = []
    for clause in CLAUSE.split(s):
        clause = TRAILING_PUNCT.sub("", clause.strip())
        clause = re.sub(r"(?i)(?<!\s)\s+please$", "", clause)
        tail = _STANDING_TAIL_EN.search(clause)
        if tail:
            clause = clause[: tail.start()]
        clause = re.sub(r"(?i)(?<!\s)\s+please$", "", clause)
        m = _CONSTRAINT_EN.match(clause)
        if m:
            neg = fold(m.group("neg"))
            rest = m.group("rest")
            if _ONE_OFF_EN.search(rest) or extract_prefs.orders_or_claims(rest, addressing=False):
                continue  # "don't ask me for 2FA": a waived check, not a taste
            standing = bool(tail or neg in ("stop", "no more") or re.match(r"(?i)ever\b", rest))
            if neg in ("do not", "dont"):
                neg = "don't"
            value = f"{neg} {rest}"
            them = swap_pronouns_en(rest)
            if neg == "don't":
                statement = f"The user asks you not to {them}"
            elif neg == "never":
                statement = f"The user asks you never to {them}"
            elif neg == "avoid":
                statement = f"The user asks you to avoid {them}"
            else:
                statement = f"The user asks you to stop {them}"
            hits.append(
                Hit(
                    FactType.SEMANTIC,
                    "communication_constraint",
                    value,
                    statement,
                    CONF_DIRECT,
                    standing,
                )
            )
            continue
        m = _NO_THING_EN.match(clause)
        if m:
            rest = fold(m.group("rest"))
            hits.append(
                Hit(
                    FactType.SEMANTIC,
                    "communication_constraint",
                    f"no {rest}",
                    f"The user asks for no {swap_pronouns_en(rest)}",
                    CONF_DIRECT,
                    bool(tail or rest.startswith("more ")),
                )
            )
    return hits


_ALLERGY_EN = (
    rx(
        r"(?i)\bi(?:'m| am)\s+(?:(?:very|severely|highly|also|really|deathly|mildly|seriously)\s+)*"
        r"allergic\s+to\s+(?P<x>.+?)(?:\s+(?:so|but|which|because)\b.*)?$"
    ),
    rx(r"(?i)\bi\s+have\s+(?:an?\s+)?allerg(?:y|ies)\s+to\s+(?P<x>.+?)$"),
    rx(
        r"(?i)\bi\s+have\s+(?:an?\s+)?(?:(?:severe|serious|mild)\s+)?"
        r"(?P<x>[a-z][a-z\- ]{1,30}?)\s+allerg(?:y|ies)\b"
    ),
)


def allergy_en(s: str) -> list[Hit]:
    for pattern in _ALLERGY_EN:
        m = pattern.search(s)
        if m:
            return [
                Hit(
                    FactType.SEMANTIC,
                    "allergy",
                    singular(item),
                    f"The user is allergic to {fold(item)}",
                    CONF_DIRECT,
                )
                for item in split_list_en(m.group("x"))
            ]
    return []


_DIETS_EN = {
    "vegetarian": ("vegetarian", "The user is vegetarian"),
    "vegan": ("vegan", "The user is vegan"),
    "pescatarian": ("pescatarian", "The user is pescatarian"),
    "pescetarian": ("pescatarian", "The user is pescatarian"),
    "gluten-free": ("gluten-free", "The user eats gluten-free"),
    "gluten free": ("gluten-free", "The user eats gluten-free"),
    "lactose intolerant": ("lactose-free", "The user is lactose intolerant"),
    "lactose-intolerant": ("lactose-free", "The user is lactose intolerant"),
    "dairy-free": ("dairy-free", "The user eats dairy-free"),
    "dairy free": ("dairy-free", "The user eats dairy-free"),
    "kosher": ("kosher", "The user keeps kosher"),
    "halal": ("halal", "The user eats halal"),
    "plant-based": ("vegan", "The user is vegan"),
    "teetotal": ("no alcohol", "The user does not drink alcohol"),
    "keto": ("keto", "The user follows a keto diet"),
    "ketogenic": ("keto", "The user follows a keto diet"),
    "low-carb": ("low-carb", "The user follows a low-carb diet"),
    "low carb": ("low-carb", "The user follows a low-carb diet"),
    "paleo": ("paleo", "The user follows a paleo diet"),
    "teetotaler": ("no alcohol", "The user does not drink alcohol"),
}
_DIET_WORDS_EN = "|".join(sorted(_DIETS_EN, key=len, reverse=True))
_DIET_IS_EN = rx(
    r"(?i)\bi(?:'m| am)\s+(?:(?:a|an|strictly|fully|now|also|completely|mostly)\s+)*(?P<d>"
    + _DIET_WORDS_EN
    + r")\b"
)
_DIET_EAT_EN = rx(r"(?i)\bi\s+(?:only\s+)?(?:eat|keep|follow a)\s+(?P<d>" + _DIET_WORDS_EN + r")\b")
_DIET_ON_EN = rx(
    r"(?i)\bi(?:'m| am|(?:'ve| have)(?:\s+(?:recently|lately|always|also))?\s+been)\s+"
    r"(?:(?:now|currently|still|strictly|also|mostly|recently|lately)\s+)*"
    r"(?:on|following|doing|eating)\s+(?:an?\s+|the\s+)?(?:strict\s+)?"
    r"(?:(?P<k>" + _DIET_WORDS_EN + r")(?:\s+diet)?|(?P<d>[a-z\-]+)\s+diet)\b"
)
# Not a diet kind ("I'm on a strict diet"), or a past one ("…been on a keto diet before").
_DIET_ON_STOP = frozenset("new special strict crash healthy balanced good bad proper no".split())
_DIET_ON_PAST = rx(r"(?i)\b(?:before|until|till|once|twice|times|last (?:year|month))\b")
_NOT_EAT_EN = rx(
    r"(?i)\bi\s+(?:don't|do not|dont|never|can't|cannot|can not)\s+(?P<verb>eat|drink|have)"
    # "I don't have to paste it again" is no diet: "have to" is a duty
    r"(?:\s+(?!to\s)(?P<x>[a-z][a-z\- ,]{1,40}?))?"
    r"(?:\s+(?:anymore|at all|ever|because\b.*|since\b.*))?$"
)


def diet_en(s: str) -> list[Hit]:
    if re.search(r"(?i)\ballerg", s):
        return []
    for pattern in (_DIET_IS_EN, _DIET_EAT_EN):
        m = pattern.search(s)
        if m:
            value, statement = _DIETS_EN[fold(m.group("d"))]
            return [Hit(FactType.SEMANTIC, "dietary_restriction", value, statement)]
    m = _DIET_ON_EN.search(s)
    if m and not _DIET_ON_PAST.search(s, m.end()):
        conf = CONF_RECENT if RECENT.search(s) else CONF_PLAIN
        if m.group("k"):
            value, statement = _DIETS_EN[fold(m.group("k"))]
            return [Hit(FactType.SEMANTIC, "dietary_restriction", value, statement, conf)]
        diet = fold(m.group("d"))
        if diet not in _DIET_ON_STOP:
            return [
                Hit(
                    FactType.SEMANTIC,
                    "dietary_restriction",
                    diet,
                    f"The user is on a {diet} diet",
                    conf,
                )
            ]
    m = _NOT_EAT_EN.search(s)
    if not m:
        return []
    verb = fold(m.group("verb"))
    if not m.group("x"):
        if verb != "drink":
            return []
        return [
            Hit(
                FactType.SEMANTIC,
                "dietary_restriction",
                "no alcohol",
                "The user does not drink alcohol",
            )
        ]
    hits = []
    for item in split_list_en(m.group("x")):
        item = fold(item)
        what = "drink" if verb == "drink" else "eat"
        hits.append(
            Hit(
                FactType.SEMANTIC,
                "dietary_restriction",
                f"no {item}",
                f"The user does not {what} {item}",
            )
        )
    return hits


_FORMAT_RES_EN = tuple((rx(rf"(?i)\b(?:{p})\b"), v) for p, v in FORMATS_EN)


def format_en(s: str) -> list[Hit]:
    return format_hit(s, _FORMAT_RES_EN, zh=False) if detect_lang(s) == "en" else []


_LANG_PREF_EN = (
    rx(
        r"(?i)\b(?:reply|respond|answer|talk|write|speak|communicate|chat|replies|responses|answers)"
        r"(?:\s+(?:to\s+|with\s+)?me)?(?:\s+(?:only|always))?\s+in\s+(?P<l>" + LANG_EN_ALT + r")\b"
    ),
    rx(
        r"(?i)\bi\s+(?:prefer|want|like)\s+(?P<l>"
        + LANG_EN_PREF_ALT
        + r")\s*(?:replies|responses|answers)?\s*$"
    ),
    rx(
        r"(?i)\buse\s+(?P<l>"
        + LANG_EN_ALT
        + r")\s+(?:with me|when (?:talking|replying)|for (?:replies|responses|answers))"
    ),
)


def language_en(s: str) -> list[Hit]:
    for pattern in _LANG_PREF_EN:
        m = pattern.search(s)
        if m and not negated_before(s, m.start()):
            code, _, en_label = LANGUAGES[fold(m.group("l"))]
            return [
                Hit(
                    FactType.PROFILE,
                    "preferred_language",
                    code,
                    f"The user prefers replies in {en_label}",
                )
            ]
    return []


_LANG_EN_WORD = r"(?:" + LANG_EN_ALT + r")\b"
_SPEAK_EN = rx(
    r"(?i)\b(?:i\s+(?:(?:also|can|do|fluently|natively|only|still|even)\s+)*speak|"
    r"i(?:'m| am)\s+(?:(?:also|pretty|quite|very|fully)\s+)*(?:fluent|conversational|"
    r"bilingual|proficient)\s+in|my\s+(?:native\s+language|mother\s+tongue|first\s+language)"
    r"\s+is)\s+(?:(?:some|a\s+(?:bit|little)\s+of|a\s+little|basic|fluent|decent|native|"
    r"conversational|good|broken)\s+)?(?P<x>" + _LANG_EN_WORD + r"(?:\s*(?:,|&|/|\band\b|"
    r"\bplus\b)\s*(?:(?:some|a\s+(?:bit|little)\s+of|a\s+little|basic|fluent|"
    r"conversational)\s+)?" + _LANG_EN_WORD + r")*)"
)
_LANG_EN_RE = rx(r"(?i)\b(?:" + LANG_EN_ALT + r")\b")


def spoken_en(s: str) -> list[Hit]:
    m = _SPEAK_EN.search(s)
    if not m:
        return []
    out = []
    for lang in _LANG_EN_RE.findall(m.group("x")):
        label = LANGUAGES[fold(lang)][2]
        out.append(Hit(FactType.SEMANTIC, "language_spoken", label, f"The user speaks {label}"))
    return out


_CUISINE_EN = (
    rx(
        r"(?i)\bi\s+(?:really\s+|absolutely\s+|just\s+|especially\s+)?(?:love|like|enjoy|prefer|adore)\s+"
        r"(?P<x>[a-z]+(?:\s+[a-z]+)?)\s+(?:food|cuisine|dishes)\b"
    ),
    rx(r"(?i)\bmy\s+favou?rite\s+(?:food|cuisine)\s+is\s+(?P<x>[a-z ]+?)(?:\s+(?:food|cuisine))?$"),
    rx(r"(?i)\bi\s+(?:really\s+)?(?:love|like|enjoy|prefer|adore)\s+(?P<x>" + DISHES_EN + r")$"),
)


_NATIONAL_EN = frozenset(
    "thai indian mexican korean sichuan cantonese italian japanese chinese french vietnamese "
    "greek spanish turkish lebanese ethiopian american middle eastern".split()
)


def cuisine_en(s: str) -> list[Hit]:
    s = TRAILING_PUNCT.sub("", s)
    for index, pattern in enumerate(_CUISINE_EN):
        m = pattern.search(s)
        if m:
            x = fold(m.group("x")).strip()
            if x in _NATIONAL_EN:
                label = f"{x.title()} food"
            else:
                label = f"{x} food" if index == 0 else x
            return [Hit(FactType.PROFILE, "preferred_cuisine", x, f"The user likes {label}")]
    return []


_NAME_WORDS = r"(?P<n>[A-Z][\w'\-]*(?:\s+[A-Z][\w'\-]*){0,2})"
_NAME_CALL_EN = rx(
    r"(?i:\b(?:call\s+me|i\s+go\s+by|address\s+me\s+as|refer\s+to\s+me\s+as))\s+" + _NAME_WORDS
)
_NAME_IS_EN = rx(r"(?i:\bmy\s+name\s+is|\bmy\s+name's|\bthe\s+name's)\s+" + _NAME_WORDS)


def name_en(s: str) -> list[Hit]:
    m = _NAME_CALL_EN.search(s)
    if m and not negated_before(s, m.start() + 1):
        n = m.group("n")
        return [
            Hit(
                FactType.PROFILE,
                "preferred_name",
                n,
                f"The user wants to be called {n}",
                CONF_DIRECT,
            )
        ]
    m = _NAME_IS_EN.search(s)
    if m and not negated_before(s, m.start() + 1):
        n = m.group("n")
        return [Hit(FactType.PROFILE, "preferred_name", n, f"The user's name is {n}")]
    return []


_PLACE_EN = r"(?P<p>[A-Z][\w\-']*(?:(?:\s+|,\s*)[A-Z][\w\-']*){0,3})"
_LIVE_EN = rx(
    r"(?i:\bi(?:\s+|(?='))(?:(?:'m|am)\s+(?:currently\s+|now\s+|still\s+)?"
    r"(?:living|based|located)|(?:currently\s+|now\s+|still\s+|just\s+|recently\s+)?"
    r"(?:live|reside|moved|have moved|'ve moved))\s+(?:in|to|at|out to))\s+" + _PLACE_EN
)
_EMPLOYER = r"(?P<e>[A-Z][\w&.\-]*(?:\s+[A-Z][\w&.\-]*){0,3})"
_JOB_EN = rx(
    r"(?i:\bi(?:'m| am)\s+(?:currently\s+|now\s+)?(?:a|an|the)|\bi\s+work\s+as\s+(?:a|an|the))\s+"
    r"(?P<j>(?i:(?:[a-z\-]+\s+){0,3}?(?:" + JOB_NOUNS_EN + r")))\b"
    r"(?:\s+(?i:at|for|with|of)\s+" + _EMPLOYER + r")?"
)
_WORK_AT_EN = rx(
    r"(?i:\bi\s+(?:work|am working|'m working|currently work)\s+(?:at|for))\s+" + _EMPLOYER
)


def where_en(s: str) -> list[Hit]:
    m = _LIVE_EN.search(s)
    if m:
        p = m.group("p").strip(" ,")
        return [Hit(FactType.PROFILE, "location", p, f"The user lives in {p}")]
    m = _JOB_EN.search(s)
    if m:
        j = fold(m.group("j"))
        hits = [
            Hit(
                FactType.PROFILE,
                "job_title",
                j,
                f"The user is {'an' if j[0] in 'aeiou' else 'a'} {j}",
            )
        ]
        if m.group("e"):
            hits.append(
                Hit(FactType.PROFILE, "employer", m.group("e"), f"The user works at {m.group('e')}")
            )
        return hits
    m = _WORK_AT_EN.search(s)
    if m:
        return [
            Hit(FactType.PROFILE, "employer", m.group("e"), f"The user works at {m.group('e')}")
        ]
    return []
