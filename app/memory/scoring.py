"""Recall scoring: fuse the channels, weigh usefulness, cut to `min_score` and `k`
(docs/recall.md#scoring).

Pure. The store hands over one `RecallRow` per candidate of the user's already-filtered
pool; `now` is a parameter. The score is absolute (0..1, comparable across queries):

    relevance  = evidence × (1 - RRF_SHARE + RRF_SHARE × rrf)        0..1
    evidence   = 1 - Π(1 - e_channel)      noisy-OR of calibrated per-channel evidence
    rrf        = weighted reciprocal-rank fusion / its maximum        0..1
    quality    = freshness × trust × confidence                       0..1
    score      = relevance × quality ** QUALITY_WEIGHT                 0..1

Evidence says whether a fact is relevant at all (a top-ranked but weak cosine is still
weak: docs/recall.md#scoring, docs/recall.md#hard-filter "阈值宁高不低"); RRF says how strongly the
channels agree within
this query and orders near-equals. Structured is the strongest channel, then dense,
keyword, and recency, which alone can never pass the default `min_score`.

Quality (docs/recall.md#scoring: freshness × trust × confidence) tempers relevance rather than
multiplying it in at full strength: QUALITY_WEIGHT = 0.5 is the geometric mean, so an
ordinary fact (user_message, confidence 0.7, fresh: quality 0.51) keeps 72 % of its
relevance instead of 51 %, while the order by quality is unchanged and a poor fact
(an old agent inference at confidence 0.5: quality 0.1) still keeps only 32 %. The score
stays in 0..1 and monotonic in every factor, so `min_score` means the same everywhere.

`prior` (tier `new`, docs/tiers.md#tier-new): the facts the tier admits are the user's hard
constraints, relevant whatever the question; they get this much evidence even when no
channel found them.
"""

from __future__ import annotations

import math
import re
import uuid
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import pairwise
from typing import Any

from app.memory import text, timeref
from app.memory.model import AUTHORITY, FactType, SourceKind
from app.memory.policy import Policy

STRUCTURED, DENSE, KEYWORD, RECENCY = "structured", "dense", "keyword", "recency"
TEMPORAL = "temporal"  # the fact happened within the time span the query names
CHANNELS: tuple[str, ...] = (STRUCTURED, DENSE, KEYWORD, RECENCY, TEMPORAL)

# Weighted RRF: structured strongest, recency weakest. RRF_K is small because a user's
# pool is small (tens to hundreds of facts), so rank differences should matter.
RRF_WEIGHTS: dict[str, float] = {STRUCTURED: 1.0, DENSE: 0.7, KEYWORD: 0.5, RECENCY: 0.2}
RRF_K = 10
RRF_SHARE = 0.25  # the share of relevance that rank agreement decides; evidence the rest
_RRF_MAX = sum(w / (RRF_K + 1) for w in RRF_WEIGHTS.values())

# Absolute evidence per channel, each 0..cap.
STRUCTURED_EVIDENCE = 1.0  # the question asked for this predicate
# Cosine → DENSE_CAP × clip((cos - floor) / (full - floor)). Cosines are embedder-specific:
# (0.2, 0.8) fits the default USE-multilingual-v3 embedder (related question/fact pairs
# 0.4–0.65, unrelated ≤ 0.25; the full mark at 0.8 rather than 0.65 leaves BM25 its share
# on long conversations, measured on LoCoMo's tuning split); e5-style models crowd into
# 0.7–0.9 and need their own pair, passed as `dense_range` by the caller that knows the
# embedding model.
DENSE_RANGE: tuple[float, float] = (0.2, 0.65)
DENSE_CAP = 0.95
# Within a query, a cosine well below the pool's best is weaker evidence: in a long
# conversation many turns sit at a middling cosine to any question (shared names, chat);
# the lead keeps them from outvoting a keyword match. 0 = off. Through the API, 3 against
# 1: LoCoMo's tuning split 0.693 against 0.672, the Chinese set's tuning half unchanged.
DENSE_LEAD = 3.0
# BM25 (app.store.recall: IDF and length normalisation over the user's own pool) →
#     KEYWORD_CAP × lead × coverage
#   lead     = bm25 / best: how close the fact is to this query's best keyword match;
#   coverage = min(1, best / (ideal × KEYWORD_COVERAGE)): how much of the query's
#              information the best match holds, `ideal` being Σ idf of every query term
#              (a term found nowhere counts in full). A best match holding half of it is
#              full evidence; one common word of a long question is weak evidence.
# Within one query the evidence is linear in BM25; across queries it stays absolute, so
# `min_score` keeps its meaning. Fitted on LoCoMo's tuning split (evals/locomo.py) with
# the zh/en eval as the guard against lost precision.
KEYWORD_CAP = 0.95
KEYWORD_COVERAGE = 0.75
KEYWORD_POWER = 1.0
RECENCY_CAP = 0.15  # below the default min_score on purpose: recency alone never injects
# An episode inside the span the query names ("what did I do last week?", "on 9 November
# 2022"): the question asks about that time, so it is evidence even alone (it passes the
# default min_score); with a keyword or dense match it leads. Fitted on LoCoMo's tuning split.
TEMPORAL_EVIDENCE = 0.5
# Episode context: what happened in the same episode as a strong match (occurred within
# EPISODE_SPAN of it) is often the rest of the answer — the reply to the question, the
# detail a few turns on, the second half of a two-part question. An episode that passed
# the cut gains EPISODE_CONTEXT × the best score of another episode of that span. The
# gain lifts the order (and the score reported), never the cut: a fact passes
# `min_score` on its own score or not at all, so context alone injects nothing.
# LoCoMo's tuning split (evals/rescore.py, `turns`): 0.669 → 0.705; 0 = off.
EPISODE_CONTEXT = 0.3
EPISODE_SPAN_S = 3600.0
# Transcript neighbours: the episode recorded just before or after a strong match, within
# EPISODE_SPAN_S of it (`RecallRow.neighbours`: the store's order of creation over the
# user's episodes), is the line next to it — the question a reply answers, the reply to a
# question, the second half of a story told over two turns. Within one session's date
# every turn shares `occurred_at`, so EPISODE_CONTEXT cannot tell the next line from the
# rest of the day; the order of writing can. An episode that passed the cut gains
# NEIGHBOUR_CONTEXT × the best score of a kept neighbour, after the episode context and
# with the same rule: it orders, never admits. The store brings the neighbours of the best
# few dense and keyword matches into the candidates (app.store.recall). Fitted through
# evals/rescore.py on the tuning split, then re-collected with the statement as shipped:
# LoCoMo `turns` 0.729 → 0.751 (the neighbours as candidates alone: 0.735; single-hop
# 0.804 → 0.831), the Chinese set's `turns` unchanged (0.839); 0.1 and 0.2 measured lower
# on LoCoMo. Semantic facts take no part (their score stays their own, so `min_score`
# reads the same on them; as neighbours they measured +0.002 on LoCoMo's
# `observations`). 0 = off.
NEIGHBOUR_CONTEXT = 0.15
# Statements this similar (character-bigram Jaccard) say the same thing: one is enough.
NEAR_DUPLICATE = 0.8
# A question that asks when ("when did…", "什么时候", "哪天": timeref.asks_when) is
# answered by a statement that says when ("yesterday", "上周日", "7月13号":
# timeref.mentions_time), which the question's own words rarely match. Such a candidate
# gains this much evidence, and only one some channel found: it never admits a fact
# alone. Through evals/rescore.py on the tuning split (`turns`): LoCoMo 0.708 → 0.715
# (temporal 0.883 → 0.903), the Chinese set 0.785 → 0.821 (temporal 0.806 → 0.917);
# 0.3 and 0.5 measured the same, 0.1 less. 0 = off.
WHEN_EVIDENCE = 0.3
# A question about someone ("What did Caroline paint?", "林晓为什么想换工作？") is answered
# by what that person said: a fact whose subject the question names gains this much
# evidence, the subject being the speaker of the transcript line the fact is or was
# written from (`subject`: its statement's or its evidence's speaker label). The words alone
# cannot tell it: the name is in most of that person's lines and in the lines spoken to
# them ("Wow, Caroline!"), so its IDF is low. Like EPISODE_CONTEXT, the gain orders what
# passed `min_score` on its own score, never the cut. Its weight is WHEN_EVIDENCE's,
# not fitted (0.5 measured the same). LoCoMo's tuning split through the API, `turns`:
# 0.697 → 0.713 (every category up, multi-hop 0.342 → 0.386), the Chinese set's tuning
# half unchanged; `observations` by their evidence's speaker: LoCoMo 0.619 → 0.628, the
# Chinese set 0.836 → 0.852. 0 = off.
SUBJECT_EVIDENCE = 0.3
# A transcript line's length says how much it tells: the turns that answer a question
# about someone's life ("What kind of writings does Joanna do?") are the ones that say
# something ("I finally finished my first full screenplay…"), while the lines a question
# meets by its names and its tone are short ("Joanna: Wow, great job! What was it
# called?"). On LoCoMo's tuning split the evidence turns among the first 40 have a median
# of 177–195 characters against 105–123 for the others (the Chinese set's: 42–49 against
# 24–28). After the context gains, an episode's score is multiplied by
# (2ℓ / (ℓ + ℓ̃)) ** LENGTH_PRIOR, ℓ its length and ℓ̃ the candidate episodes' median
# (1 at the median, in any language; capped at 1); like EPISODE_CONTEXT it orders what
# passed `min_score` on its own score, never the cut. Through evals/rescore.py on the
# tuning split, `turns`: LoCoMo 0.748 → 0.754 (multi-hop 0.388 → 0.417, open-domain
# 0.443 → 0.500, temporal 0.922 → 0.908), the Chinese set 0.839 → 0.888; 0.25 measured
# 0.748 / 0.861, 0.75 0.752 / 0.888, 1.0 0.741 / 0.879. Semantic facts take no part (a
# statement written about a fact has no filler: LoCoMo's `observations` unchanged either
# way). 0 = off.
LENGTH_PRIOR = 0.5
# Procedural memory is how to act in this scope: relevant to any question there.
PROCEDURAL_PRIOR = 0.5
QUALITY_WEIGHT = 0.5  # score = relevance × quality ** QUALITY_WEIGHT (see the module doc)

TRUST_MIN, TRUST_MAX = 0.6, 1.0  # authority 1..7 mapped linearly
_A_LO, _A_HI = min(AUTHORITY.values()), max(AUTHORITY.values())
TRUST: dict[SourceKind, float] = {
    k: TRUST_MIN + (TRUST_MAX - TRUST_MIN) * (a - _A_LO) / (_A_HI - _A_LO)
    for k, a in AUTHORITY.items()
}

_DAY = 86400.0
_LN2 = math.log(2.0)


@dataclass(frozen=True, slots=True)
class RecallRow:
    """One candidate fact from the user's filtered pool, with its raw channel signals.

    The store fills it; everything after `contested` is per-query channel input:
    `structured` the predicate was asked for (intent.predicates_for_query); `cosine` the
    similarity of the query embedding to the fact's (None: no embedding of the current
    model); `bm25` its Okapi BM25 over the pool (None or 0: no keyword hit);
    `recency_rank` 1-based rank in the
    recency channel (None: not among the recent ones). Dense and keyword ranks are
    derived here from the raw values, so the store need not compute them.
    """

    id: uuid.UUID
    statement: str
    predicate: str | None
    value: Any
    type: FactType
    scope: str
    source_kind: SourceKind
    confidence: float
    valid_from: datetime
    last_observed_at: datetime  # the store's updated_at when it keeps no separate column
    created_at: datetime
    contested: bool = False
    structured: bool = False
    cosine: float | None = None
    bm25: float | None = None
    recency_rank: int | None = None
    occurred_at: datetime | None = None  # when the event happened (episodes)
    evidence_head: str | None = None  # the start of its evidence: who said it (text.speaker)
    # the episodes of the pool created just before and after it, within EPISODE_SPAN_S
    neighbours: tuple[uuid.UUID, ...] = ()


@dataclass(frozen=True, slots=True)
class ScoredFact:
    """A fact that passed scoring, with the parts of its score for traces."""

    row: RecallRow
    score: float
    relevance: float
    freshness: float
    trust: float
    channels: tuple[str, ...]
    age_days: float
    stale: bool

    @property
    def id(self) -> uuid.UUID:
        return self.row.id

    @property
    def statement(self) -> str:
        return self.row.statement

    @property
    def type(self) -> FactType:
        return self.row.type

    @property
    def source_kind(self) -> SourceKind:
        return self.row.source_kind

    @property
    def confidence(self) -> float:
        return self.row.confidence

    @property
    def contested(self) -> bool:
        return self.row.contested


def _aware(dt: datetime) -> datetime:
    return dt if dt.tzinfo is not None else dt.replace(tzinfo=UTC)


def age_days(then: datetime, now: datetime) -> float:
    """Days from `then` to `now`, never negative (clock skew is not 'from the future')."""
    return max(0.0, (_aware(now) - _aware(then)).total_seconds() / _DAY)


def freshness(age: float, half_life: float, floor: float = 0.0) -> float:
    """Exponential decay 0.5**(age/half_life), never below `floor`: old facts are only
    down-weighted, never dropped by age alone (docs/lifecycle.md#decay keep_floor)."""
    if half_life <= 0:
        return 1.0
    return max(floor, min(1.0, math.exp(-_LN2 * max(0.0, age) / half_life)))


def is_stale(fact: RecallRow, now: datetime, policy: Policy) -> bool:
    """Older than `fresh_days` since last observed, or confidence under `low_confidence`."""
    return _stale(age_days(fact.last_observed_at, now), fact.confidence, policy)


def _stale(age: float, confidence: float, policy: Policy) -> bool:
    return age > policy.recall.fresh_days or confidence < policy.recall.low_confidence


def subject(row: RecallRow) -> str | None:
    """Whom a fact is about, when a transcript line says it: the speaker of the fact's
    own line ("Caroline: I went to a pride parade"), else of the line it was written
    from (its evidence: an observation or an extracted fact)."""
    who = text.speaker(row.statement)
    if who is None and row.evidence_head:
        who = text.speaker(row.evidence_head)
    return who


def dense_evidence(
    cosine: float | None,
    dense_range: tuple[float, float] = DENSE_RANGE,
    best: float | None = None,
) -> float:
    """Calibrated cosine evidence, tempered by the fact's lead: how close its cosine is
    to the best of this query's pool, (cos - floor) / (best - floor), to DENSE_LEAD."""
    if cosine is None:
        return 0.0
    floor, full = dense_range
    x = (cosine - floor) / (full - floor)
    evidence = DENSE_CAP * min(1.0, max(0.0, x))
    if best is not None and best > floor and evidence > 0:
        evidence *= min(1.0, (cosine - floor) / (best - floor)) ** DENSE_LEAD
    return evidence


def keyword_evidence(bm25: float | None, best: float, ideal: float) -> float:
    """Evidence of a BM25 match: coverage of the query's information, tempered by how
    close the match is to the query's best one (see KEYWORD_CAP)."""
    if not bm25 or bm25 <= 0 or best <= 0:
        return 0.0
    lead = min(1.0, bm25 / best)
    coverage = min(1.0, best / (ideal * KEYWORD_COVERAGE)) if ideal > 0 else 1.0
    return float(KEYWORD_CAP * lead * coverage**KEYWORD_POWER)


def recency_evidence(rank: int | None) -> float:
    return 0.0 if rank is None or rank < 1 else RECENCY_CAP / rank


def _ranks(values: Iterable[tuple[float | None, uuid.UUID, int]]) -> dict[int, int]:
    """1-based ranks of the present, positive values (ties: by id)."""
    present = sorted((-v, key, i) for v, key, i in values if v is not None and v > 0)
    return {i: r for r, (_, _, i) in enumerate(present, start=1)}


_W_S = RRF_WEIGHTS[STRUCTURED] / (RRF_K + 1)
_W_D, _W_K, _W_R = RRF_WEIGHTS[DENSE], RRF_WEIGHTS[KEYWORD], RRF_WEIGHTS[RECENCY]
_W_T = RRF_WEIGHTS[DENSE] / (RRF_K + 1)  # a temporal match counts like a top dense rank
# (-score, id, row index, relevance, freshness, trust, age, channels): a row that passed
_Kept = tuple[float, uuid.UUID, int, float, float, float, float, tuple[str, ...]]


def score_facts(
    rows: Sequence[RecallRow],
    now: datetime,
    policy: Policy,
    *,
    k: int | None = None,
    min_score: float | None = None,
    dense_range: tuple[float, float] = DENSE_RANGE,
    prior: float = 0.0,
    keyword_ideal: float = 0.0,
    window: tuple[datetime, datetime] | None = None,
    diverse_top: bool = False,
    asks_when: bool = False,
    query: str = "",
) -> list[ScoredFact]:
    """Score, drop below `min_score`, order (score desc, then id) and keep at most `k`,
    with `diverse_top` leaving out near-duplicates of a fact already kept (`diverse`).

    `prior` is evidence every row gets whatever the channels say (0..1; tier `new`
    gives its admitted hard constraints one, so they are injected for any question).
    `keyword_ideal` is the store's BM25 scale for this query (RecallPool.bm25_ideal).
    `window` is the time span the query names ("last week": app.memory.timeref): an
    episode that happened inside it gets TEMPORAL_EVIDENCE (channel `temporal`).
    `asks_when`: the query asks for a time; a found fact that says when gains
    WHEN_EVIDENCE (channel `temporal` too). `query`: the question's text, for
    SUBJECT_EVIDENCE (a found fact whose speaker it names).

    `k` and `min_score` default to the policy's; the request may override them. The
    order is total and depends only on the inputs, so identical calls give identical
    lists (the packed block is then byte-identical and prompt-cacheable).
    """
    rc = policy.recall
    k = rc.k if k is None else k
    floor_score = rc.min_score if min_score is None else min_score
    half_life = policy.decay.half_life_days if policy.decay.enabled else 0.0
    keep_floor = policy.decay.keep_floor
    now = _aware(now)

    best_cos = max((r.cosine for r in rows if r.cosine is not None), default=None)
    dense = [dense_evidence(r.cosine, dense_range, best_cos) for r in rows]
    dense_rank = _ranks((r.cosine if dense[i] > 0 else None, r.id, i) for i, r in enumerate(rows))
    keyword_rank = _ranks((r.bm25, r.id, i) for i, r in enumerate(rows))
    best = max((r.bm25 for r in rows if r.bm25), default=0.0)
    start, end = (_aware(window[0]), _aware(window[1])) if window else (None, None)
    no_prior = 1.0 - min(1.0, max(0.0, prior))
    named: dict[str, bool] = {}  # speaker → the query names them (few speakers per pool)

    # Light tuples first; ScoredFact objects only for the k that are kept.
    kept: list[_Kept] = []
    for i, r in enumerate(rows):
        rrf = 0.0
        miss = 1.0  # Π(1 - e)
        channels: list[str] = []
        if r.structured:
            rrf += _W_S
            miss *= 1.0 - STRUCTURED_EVIDENCE
            channels.append(STRUCTURED)
        rank = dense_rank.get(i)
        if rank is not None:
            rrf += _W_D / (RRF_K + rank)
            miss *= 1.0 - dense[i]
            channels.append(DENSE)
        rank = keyword_rank.get(i)
        if rank is not None:
            rrf += _W_K / (RRF_K + rank)
            miss *= 1.0 - keyword_evidence(r.bm25, best, keyword_ideal)
            channels.append(KEYWORD)
        if (
            start is not None
            and end is not None
            and r.occurred_at is not None
            and start <= _aware(r.occurred_at) < end
        ):
            rrf += _W_T
            miss *= 1.0 - TEMPORAL_EVIDENCE
            channels.append(TEMPORAL)
        rank = r.recency_rank
        if rank is not None and rank >= 1:
            rrf += _W_R / (RRF_K + rank)
            miss *= 1.0 - RECENCY_CAP / rank
            channels.append(RECENCY)
        if r.type == FactType.PROCEDURAL:
            miss *= 1.0 - PROCEDURAL_PRIOR
        miss *= no_prior
        if miss >= 1.0:
            continue  # no evidence at all
        if asks_when and WHEN_EVIDENCE > 0 and timeref.mentions_time(r.statement):
            miss *= 1.0 - WHEN_EVIDENCE
            if TEMPORAL not in channels:
                channels.append(TEMPORAL)
        agreement = 1.0 - RRF_SHARE + RRF_SHARE * min(1.0, rrf / _RRF_MAX)
        relevance = (1.0 - miss) * agreement
        seen = r.last_observed_at
        if seen.tzinfo is None:
            seen = seen.replace(tzinfo=UTC)
        age = (now - seen).total_seconds() / _DAY
        if age < 0.0:
            age = 0.0  # clock skew is not "from the future"
        # freshness(age, half_life, keep_floor), inlined: this loop is the hot path
        fresh = math.exp(-_LN2 * age / half_life) if half_life > 0 else 1.0
        if fresh < keep_floor:
            fresh = keep_floor
        trust = TRUST[r.source_kind]
        confidence = (
            r.confidence if 0.0 <= r.confidence <= 1.0 else min(1.0, max(0.0, r.confidence))
        )
        # Rounded so that float noise never decides an order; ties then go by id.
        quality = fresh * trust * confidence
        score = round(relevance * quality**QUALITY_WEIGHT, 6)
        if score < floor_score:
            continue
        if query and SUBJECT_EVIDENCE > 0 and (who := subject(r)) is not None:
            if who not in named:
                named[who] = text.names(query, who)
            if named[who]:  # lifts the order of what passed the cut on its own
                relevance = (1.0 - miss * (1.0 - SUBJECT_EVIDENCE)) * agreement
                score = round(relevance * quality**QUALITY_WEIGHT, 6)
        kept.append((-score, r.id, i, relevance, fresh, trust, age, tuple(channels)))
    if EPISODE_CONTEXT > 0:
        kept = with_episode_context(kept, rows)
    if NEIGHBOUR_CONTEXT > 0:
        kept = with_neighbour_context(kept, rows)
    if LENGTH_PRIOR > 0:
        kept = with_length_prior(kept, rows)
    kept.sort()
    kept = diverse(kept, rows, max(0, k)) if diverse_top else kept[: max(0, k)]
    return [
        ScoredFact(
            row=rows[i],
            score=-neg,
            relevance=round(relevance, 6),
            freshness=round(fresh, 6),
            trust=round(trust, 6),
            channels=channels,
            age_days=round(age, 3),
            stale=_stale(age, rows[i].confidence, policy),
        )
        for neg, _, i, relevance, fresh, trust, age, channels in kept
    ]


def with_episode_context(kept: list[_Kept], rows: Sequence[RecallRow]) -> list[_Kept]:
    """`kept` with each episode's score raised by EPISODE_CONTEXT × the best score of
    another kept episode that occurred within EPISODE_SPAN_S of it (capped at 1).

    Only facts that already passed the cut take part, on either side, so the gain never
    admits a fact. The episodes are sorted by time and each one's window found by
    bisection; the two best scores of a window are computed once per distinct window
    (the turns of one conversation share a few timestamps), so the cost stays near
    linear in the candidates."""
    episodes = sorted(
        (_aware(occurred).timestamp(), j)
        for j, item in enumerate(kept)
        if (occurred := rows[item[2]].occurred_at) is not None
        and rows[item[2]].type == FactType.EPISODIC
    )
    if len(episodes) < 2:
        return kept
    times = [t for t, _ in episodes]
    tops: dict[tuple[int, int], list[tuple[float, int]]] = {}
    out = list(kept)
    for t, j in episodes:
        window = (bisect_left(times, t - EPISODE_SPAN_S), bisect_right(times, t + EPISODE_SPAN_S))
        top = tops.get(window)
        if top is None:
            scores = ((-kept[o][0], o) for _, o in episodes[window[0] : window[1]])
            top = tops[window] = sorted(scores, reverse=True)[:2]
        best = next((score for score, o in top if o != j), 0.0)
        if best > 0:
            neg, *rest = kept[j]
            lifted = -round(min(1.0, -neg + EPISODE_CONTEXT * best), 6)
            out[j] = (lifted, *rest)  # type: ignore[assignment]
    return out


def with_neighbour_context(kept: list[_Kept], rows: Sequence[RecallRow]) -> list[_Kept]:
    """`kept` with each fact's score raised by NEIGHBOUR_CONTEXT × the best score of a
    kept transcript neighbour (RecallRow.neighbours), capped at 1. Both sides passed the
    cut already, so the gain never admits a fact; the scores it reads are those before
    this gain, so the order of the kept list does not matter."""
    score = {rows[item[2]].id: -item[0] for item in kept}
    out = list(kept)
    for j, item in enumerate(kept):
        best = max((score.get(n, 0.0) for n in rows[item[2]].neighbours), default=0.0)
        if best > 0:
            neg, *rest = item
            out[j] = (-round(min(1.0, -neg + NEIGHBOUR_CONTEXT * best), 6), *rest)  # type: ignore[assignment]
    return out


def with_length_prior(kept: list[_Kept], rows: Sequence[RecallRow]) -> list[_Kept]:
    """`kept` with each episode's score times (2ℓ / (ℓ + ℓ̃)) ** LENGTH_PRIOR, capped at
    1: ℓ its statement's length in characters, ℓ̃ the median length of the candidate
    episodes (`rows`), so the factor is 1 at the median whatever the language, above it
    for a longer line and below it for a shorter one. Only facts that passed the cut
    take part, so it orders and never admits nor drops a fact."""
    lengths = sorted(len(r.statement) for r in rows if r.type == FactType.EPISODIC)
    if not lengths:
        return kept
    pivot = lengths[len(lengths) // 2]
    out = list(kept)
    for j, item in enumerate(kept):
        row = rows[item[2]]
        size = len(row.statement)
        if size != pivot and row.type == FactType.EPISODIC:
            factor = (2.0 * size / (size + pivot)) ** LENGTH_PRIOR
            out[j] = (-round(min(1.0, -item[0] * factor), 6), *item[1:])
    return out


def diverse(kept: list[_Kept], rows: Sequence[RecallRow], k: int) -> list[_Kept]:
    """The first `k` of `kept` (best first), skipping any whose statement is a
    near-duplicate of one already taken (character-bigram Jaccard ≥ NEAR_DUPLICATE):
    ten paraphrases of one fact would crowd out the other facts a question needs
    (maximal marginal relevance, with the redundancy cut made hard)."""
    taken: list[_Kept] = []
    shingles: list[frozenset[str]] = []
    for item in kept:
        if len(taken) >= k:
            break
        grams = bigrams(rows[item[2]].statement)
        if any(jaccard(grams, g) >= NEAR_DUPLICATE for g in shingles):
            continue
        taken.append(item)
        shingles.append(grams)
    return taken


# what str.isalnum() is not, character for character (re's \w is isalnum() or "_")
_NOT_ALNUM = re.compile(r"[\W_]+")


def bigrams(text: str) -> frozenset[str]:
    """Character bigrams of the casefolded text without blanks and punctuation: one
    measure for Chinese and English alike."""
    folded = _NOT_ALNUM.sub("", text.casefold())
    if len(folded) < 2:
        return frozenset((folded,))
    return frozenset([a + b for a, b in pairwise(folded)])


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    shared = len(a & b)
    return shared / (len(a) + len(b) - shared)  # |a ∪ b| without building it
