"""Whether two similar free statements say the same thing: the dedupe decision
(docs/conflicts.md#deduplication).

Embedding similarity alone cannot tell "my locker code word is amber" from "… is cobalt":
the words that carry the information are a small part of the sentence. So a merge by
similarity also needs the two statements to agree on every informative token — numbers,
codes, names and other rare words. Tokens that may differ between paraphrases are only
the common vocabulary below (function words, everyday verbs of preference, generic nouns).
Pure: no I/O, no clock.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache

import rjieba

from app.memory.text import STOPWORDS, nfkc

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN = re.compile(r"[A-Za-z]")
_DIGIT = re.compile(r"\d")
_WORD = re.compile(r"\w")
_SENTENCE_END = frozenset(".!?。！？;；:：\n")
# An abbreviation's dot does not end a sentence ("Dr. Alvarez").
_ABBREVIATIONS = frozenset("dr mr mrs ms prof st jr sr mt no vs etc e.g i.e".split())

# Words a paraphrase may change without changing the fact. Deliberately short: a word not
# listed here counts as information, so two statements that differ in it stay apart.
# Quantities, comparisons and times (more/less, always/sometimes, 现在/以后) are not here:
# they change what a statement says.
COMMON_EN: frozenset[str] = frozenset(
    """
    a an the this that these those some any each every all both either neither other
    another such same own lot lots very really quite rather too also just even still
    again already
    i me my mine myself you your yours we us our they them their he him his she her it its
    user users person someone people team
    is are was were be been being am do does did done doing have has had having will would
    shall should can could may might must
    to of in on at by for with from into onto about as than like over under via per
    and or but so if because while when whenever where which who whom whose what how why
    not no
    don doesn didn isn aren wasn weren won wouldn shouldn couldn can't cannot hasn haven
    s t d m ll re ve
    like likes liked love loves loved enjoy enjoys prefer prefers preferred preference
    preferences favour favor favours favors favorite favourite fond want wants wanted wish
    need needs needed use uses used using utilise utilize work works working go goes
    get gets got keep keeps kept make makes made take takes took give gives gave
    say says said tell tells told mention mentions mentioned note noted remember remembers
    know knows think thinks feel feels consider considers find finds choose chooses
    pick picks opt opts stick sticks rely relies
    please kindly thanks
    thing things stuff way ways kind sort type style option options choice choices
    something anything everything nothing one ones
    good great nice fine okay ok
    answer answers reply replies response responses output outputs format formats
    """.split()
)
COMMON_ZH: frozenset[str] = frozenset(
    """
    用户 我 我的 你 你的 他 她 他们 我们 自己 本人 的 了 是 在 和 与 及 并 也 都 就
    还 又 再 才 很 非常
    比较 特别 已经
    喜欢 喜爱 爱 偏好 偏爱 倾向 倾向于 习惯 希望 想 想要 要 需要 愿意 爱好 中意 钟意 青睐 热爱
    用 使用 采用 选择 选 请 记住 记得 记下 说 说过 提到 表示 告诉 认为 觉得 知道
    以 用来 来 去 把 被 给 让 对 对于 关于 为 为了 从 向 跟 同
    个 一个 一些 一下 这 那 这个 那个 这些 那些 所有 全部 每 每次 各 其
    回答 回复 输出 方式 形式 格式 东西 时候 情况 方面
    吗 呢 吧 啊 呀 哦 嗯 啦 么
    """.split()
)


def _stem(word: str) -> str:
    """A light English stem, so "prefers"/"prefer" and "tables"/"table" compare equal."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("ches", "shes", "sses", "xes", "zes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


@lru_cache(maxsize=16384)
def _tokens(statement: str) -> Mapping[str, bool]:
    """The statement's words (folded key → informative?). Cached (pure, and asked for
    each pool fact of each write); read-only: the cached mapping is shared."""
    text = nfkc(statement)
    chinese = _CJK.search(text) is not None
    out: dict[str, bool] = {}
    sentence_start = True
    previous = ""
    for raw in rjieba.cut(text):
        piece = raw.strip()
        if not piece:
            continue
        if not _WORD.search(piece):
            if any(ch in _SENTENCE_END for ch in piece) and not (
                piece.startswith(".") and previous.casefold() in _ABBREVIATIONS
            ):
                sentence_start = True
            continue
        folded = piece.casefold()
        key = _stem(folded) if _LATIN.search(folded) else folded
        informative = (
            _DIGIT.search(piece) is not None
            or (chinese and _LATIN.search(piece) is not None)
            or (not sentence_start and piece[:1].isupper() and folded != "i")
            or not (
                folded in COMMON_EN
                or key in COMMON_EN
                or folded in COMMON_ZH
                or folded in STOPWORDS
            )
        )
        out[key] = out.get(key, False) or informative
        sentence_start = False
        previous = piece
    return out


def differing_information(a: str, b: str) -> list[str]:
    """The informative tokens one statement has and the other lacks (sorted)."""
    ta, tb = _tokens(a), _tokens(b)
    differing = set(ta).symmetric_difference(tb)
    return sorted(k for k in differing if ta.get(k) or tb.get(k))


def same_information(a: str, b: str) -> bool:
    """True when the two statements agree on every number, code, name and rare word.

    The dedupe by similarity merges only statements for which this holds; everything else
    is a separate fact (or, with a single-valued predicate, a conflict).
    """
    return not differing_information(a, b)


def may_merge(a: str, b: str, similarity: float | None, threshold: float) -> bool:
    """The similarity merge rule: similar enough, and the same information."""
    return similarity is not None and similarity >= threshold and same_information(a, b)
