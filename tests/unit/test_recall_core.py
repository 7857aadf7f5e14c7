"""The pure recall core: intent → predicates, scoring, tiers, packing (docs/recall.md)."""

from __future__ import annotations

import random
import re
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from app.memory import intent, packing
from app.memory.intent import predicates_for_query
from app.memory.model import FactType, SourceKind
from app.memory.packing import HEADER, count_tokens, pack
from app.memory.policy import Policy
from app.memory.scoring import (
    RecallRow,
    ScoredFact,
    freshness,
    is_stale,
    score_facts,
)
from app.memory.text import nfkc
from app.memory.tiers import admit_for_tier, tier

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
POLICY = Policy()


def fid(n: int) -> uuid.UUID:
    return uuid.UUID(int=n)


def row(
    n: int,
    statement: str = "用户对花生过敏",
    *,
    type: FactType = FactType.PROFILE,
    source: SourceKind = SourceKind.EXPLICIT_INSTRUCTION,
    confidence: float = 0.95,
    age_days: float = 1.0,
    **channels: object,
) -> RecallRow:
    seen = NOW - timedelta(days=age_days)
    return RecallRow(
        id=fid(n),
        statement=statement,
        predicate=None,
        value=None,
        type=type,
        scope="global",
        source_kind=source,
        confidence=confidence,
        valid_from=seen,
        last_observed_at=seen,
        created_at=seen,
        **channels,  # type: ignore[arg-type]
    )


def scored(r: RecallRow, score: float = 0.5) -> ScoredFact:
    return ScoredFact(
        row=r,
        score=score,
        relevance=score,
        freshness=1.0,
        trust=1.0,
        channels=("structured",),
        age_days=0.0,
        stale=is_stale(r, NOW, POLICY),
    )


# ------------------------------------------------------------------------ intent

INTENT_CASES = [
    ("我对什么过敏", ["allergy"]),
    ("what am I allergic to?", ["allergy"]),
    ("过敏", ["allergy"]),
    ("我吃什么比较好", ["dietary_restriction"]),
    ("我有什么忌口", ["dietary_restriction"]),
    ("my diet", ["dietary_restriction"]),
    ("Am I vegetarian?", ["dietary_restriction"]),
    ("用什么格式输出", ["preferred_output_format"]),
    ("要不要用表格", ["preferred_output_format"]),
    ("which format do I like", ["preferred_output_format"]),
    ("你应该用什么语言回复我", ["preferred_language"]),
    ("what language should you answer in", ["preferred_language"]),
    ("我的快递一般用哪家", ["delivery_carrier"]),
    ("物流怎么选", ["delivery_carrier"]),
    ("which shipping carrier do I use", ["delivery_carrier"]),
    ("你该叫我什么", ["preferred_name"]),
    ("我叫什么名字", ["preferred_name"]),
    ("What's my name?", ["preferred_name"]),
    ("what should you call me", ["preferred_name"]),
    ("我住在哪", ["location"]),
    ("where do I live", ["location"]),
    ("my location", ["location"]),
    ("我们的技术栈是什么", ["tech_stack"]),
    ("项目用什么语言写", ["tech_stack"]),
    ("Python 版本", ["tech_stack"]),
    ("what's our stack and version", ["tech_stack"]),
    ("我的工作是什么", ["job_title", "employer"]),
    ("我现在什么职位", ["job_title", "employer"]),
    ("what is my job", ["job_title", "employer"]),
    ("what's my role", ["job_title", "employer"]),
    ("能给我发短信吗", ["communication_constraint", "contact_channel"]),
    ("怎么联系我", ["communication_constraint", "contact_channel"]),
    ("how should you contact me", ["communication_constraint", "contact_channel"]),
    ("can you use emoji", ["communication_constraint", "contact_channel"]),
    # Food questions must surface allergies and restrictions.
    ("推荐一家餐厅", ["preferred_cuisine", "allergy", "dietary_restriction"]),
    ("晚上吃点啥", ["preferred_cuisine", "allergy", "dietary_restriction"]),
    ("what cuisine should we try", ["preferred_cuisine", "allergy", "dietary_restriction"]),
    ("any food ideas for dinner?", ["preferred_cuisine", "allergy", "dietary_restriction"]),
    ("ＦＯＯＤ", ["preferred_cuisine", "allergy", "dietary_restriction"]),  # full width
    # Questions that need a hard constraint or a preference without naming it.
    ("Is this shrimp pasta okay for me?", ["allergy", "dietary_restriction"]),
    ("Is amoxicillin safe for me?", ["allergy"]),
    ("I have a sore throat, what medicine can I take?", ["allergy"]),
    ("我嗓子疼，能吃什么药", ["allergy"]),
    ("帮我买点水果", ["allergy", "dietary_restriction"]),
    ("给我买点零食", ["allergy", "dietary_restriction"]),
    ("pick up some groceries", ["allergy", "dietary_restriction"]),
    ("Compare these three laptops", ["preferred_output_format"]),
    ("Summarize this article", ["preferred_output_format"]),
    ("把这几款手机的参数对比一下", ["preferred_output_format"]),
    ("帮我整理一下本周的工作汇报", ["preferred_output_format"]),
    ("What's the weather like this weekend?", ["location"]),
    ("Find a coworking space near me", ["location"]),
    ("今天天气怎么样", ["location"]),  # the answer depends on where the user is
    ("周末附近有什么好玩的", ["location"]),
    ("Write a script to load a CSV", ["tech_stack"]),
    ("Write a small CLI tool", ["tech_stack"]),
    ("帮我写个脚本", ["tech_stack"]),
    ("Help me update my LinkedIn headline", ["job_title", "employer"]),
    ("Which languages can I read?", ["language_spoken"]),
    ("这份日文合同我自己能看懂吗", ["language_spoken"]),
    # Off-topic: nothing.
    ("hello", []),
    ("一加一等于几", []),
    ("What is the boiling point of water?", []),
    ("Tell me a joke about penguins", []),
    ("帮我买个手机", []),  # buying, but nothing edible
    ("", []),
]


@pytest.mark.parametrize(("query", "expected"), INTENT_CASES)
def test_intent_maps_question_to_predicates(query: str, expected: list[str]) -> None:
    got = predicates_for_query(query)
    assert set(expected) <= set(got)
    if not expected:
        assert got == []
    assert len(got) == len(set(got))  # each once


def test_intent_patterns_match_as_case_insensitive_ones_did() -> None:
    """The intent patterns are compiled case-sensitive for speed and read lowercased text:
    written in lower case, they find what re.IGNORECASE found (a dotless ı included)."""
    for pattern, _ in intent._COMPILED:
        assert not re.search(r"(?<!\\)[A-Z]", re.sub(r"\\.", "", pattern.pattern))
    queries = [q for q, _ in INTENT_CASES] + [
        "Am I ALLERGIC to nuts?",
        "am ı allergıc to nuts? what cuısıne should we try",  # Turkish dotless ı
        "İs thıs food okay? ſhrimp, K",
        "WHAT'S MY JOB",
        "ΣΊΣΥΦΟΣ cuisine",
    ]
    for q in queries:
        text = nfkc(q).lower()
        expected: dict[str, None] = {}
        for pattern, predicates in intent._COMPILED:
            if re.compile(pattern.pattern, re.IGNORECASE).search(text):
                expected.update(dict.fromkeys(predicates))
        assert predicates_for_query(q) == list(expected), q


def test_food_question_surfaces_allergy_in_both_languages() -> None:
    for q in ("附近有什么好吃的", "where should we eat tonight"):
        assert "allergy" in predicates_for_query(q)


def test_medicine_is_not_food() -> None:
    assert "preferred_cuisine" not in predicates_for_query("我嗓子疼，能吃什么药")
    assert "preferred_cuisine" in predicates_for_query("中午吃什么好")


def test_adverb_bijiao_is_not_a_comparison() -> None:
    # 比较 "rather" (比较合适) is not 比较 "compare" (比较一下).
    assert "preferred_output_format" not in predicates_for_query("什么时候发提醒比较合适")
    assert "preferred_output_format" in predicates_for_query("帮我比较一下这两个方案")


def test_programming_language_is_not_reply_language() -> None:
    assert "preferred_language" not in predicates_for_query("用什么语言写这个服务")
    assert "preferred_language" not in predicates_for_query("which programming language")


# ------------------------------------------------------------------------ scoring


def test_freshness_half_life_and_floor() -> None:
    assert freshness(0, 90) == 1.0
    assert freshness(90, 90) == pytest.approx(0.5)
    assert freshness(180, 90) == pytest.approx(0.25)
    assert freshness(10_000, 90, 0.3) == 0.3  # never below keep_floor
    assert freshness(-5, 90) == 1.0  # clock skew never boosts


@pytest.mark.parametrize(
    ("age", "confidence", "stale"),
    [
        (1, 0.95, False),
        (7, 0.95, False),  # exactly fresh_days: not yet stale
        (7.01, 0.95, True),
        (1, 0.59, True),  # under low_confidence
        (1, 0.6, False),
    ],
)
def test_is_stale(age: float, confidence: float, stale: bool) -> None:
    assert is_stale(row(1, age_days=age, confidence=confidence), NOW, POLICY) is stale


def test_fusion_structured_beats_dense_beats_keyword() -> None:
    rows = [
        row(1, "keyword only", bm25=1.0),
        row(2, "dense only", cosine=0.9),
        row(3, "structured only", structured=True),
        row(4, "nothing at all"),
    ]
    out = score_facts(rows, NOW, POLICY, min_score=0.0, keyword_ideal=4.0)
    assert [f.id for f in out] == [fid(3), fid(2), fid(1)]  # no evidence → never returned
    assert [f.channels for f in out] == [("structured",), ("dense",), ("keyword",)]
    assert all(0.0 < f.score <= 1.0 for f in out)


def test_agreeing_channels_beat_a_single_channel() -> None:
    rows = [row(1, cosine=0.6), row(2, cosine=0.6, bm25=1.0)]
    out = score_facts(rows, NOW, POLICY, min_score=0.0)
    assert out[0].id == fid(2) and out[0].channels == ("dense", "keyword")


def test_weak_cosine_is_weak_even_when_ranked_first() -> None:
    # The only fact with an embedding ranks 1st in the dense channel, but its cosine is
    # near the floor: the absolute score stays low and min_score drops it.
    out = score_facts([row(1, cosine=0.22)], NOW, POLICY)
    assert out == []


def test_recency_alone_never_passes_default_min_score() -> None:
    assert score_facts([row(1, recency_rank=1)], NOW, POLICY) == []
    assert score_facts([row(1, recency_rank=1)], NOW, POLICY, min_score=0.0) != []


def test_score_is_absolute_not_relative_to_the_pool() -> None:
    alone = score_facts([row(1, structured=True)], NOW, POLICY, min_score=0.0)
    with_others = score_facts(
        [row(1, structured=True), *(row(n, cosine=0.3) for n in range(2, 30))],
        NOW,
        POLICY,
        min_score=0.0,
    )
    assert alone[0].score == next(f.score for f in with_others if f.id == fid(1))


def test_usefulness_factors_only_down_weight() -> None:
    base = score_facts([row(1, structured=True)], NOW, POLICY)[0].score
    old = score_facts([row(1, structured=True, age_days=3650)], NOW, POLICY, min_score=0)[0]
    weak = score_facts([row(1, structured=True, confidence=0.5)], NOW, POLICY)[0]
    inferred = score_facts(
        [row(1, structured=True, source=SourceKind.AGENT_INFERENCE)], NOW, POLICY
    )[0]
    assert old.freshness == POLICY.decay.keep_floor and old.score < base
    assert weak.score < base and weak.stale
    assert inferred.score < base and inferred.trust < 1.0


def test_quality_tempers_rather_than_crushes() -> None:
    # An ordinary fact: user_message at the default confidence 0.7, fresh. Found by one
    # keyword, the best match holding half the query, it used to score 0.22 (relevance ×
    # 0.51) and never passed the default min_score; tempered (relevance × √quality) it does.
    ordinary = row(1, bm25=0.5, source=SourceKind.USER_MESSAGE, confidence=0.7)
    out = score_facts([ordinary], NOW, POLICY, keyword_ideal=1.0)
    assert len(out) == 1
    f = out[0]
    quality = f.freshness * f.trust * 0.7
    assert f.score == pytest.approx(f.relevance * quality**0.5, abs=1e-5)
    assert POLICY.recall.min_score <= f.score < f.relevance <= 1.0
    # Still monotonic: poorer quality, lower score, and a poor fact keeps little.
    poor = row(2, bm25=0.5, source=SourceKind.AGENT_INFERENCE, confidence=0.5, age_days=400)
    p = score_facts([poor], NOW, POLICY, min_score=0.0, keyword_ideal=1.0)[0]
    assert p.score < f.score and p.score < POLICY.recall.min_score


def test_prior_gives_evidence_without_any_channel() -> None:
    bare = row(1)  # no channel found it
    assert score_facts([bare], NOW, POLICY, min_score=0.0) == []
    out = score_facts([bare], NOW, POLICY, min_score=0.0, prior=0.5)
    assert len(out) == 1 and out[0].channels == () and 0.0 < out[0].score <= 1.0
    # A channel still adds to the prior; k still caps.
    found = row(2, structured=True)
    both = score_facts([bare, found], NOW, POLICY, min_score=0.0, prior=0.5)
    assert [f.id for f in both] == [fid(2), fid(1)]
    assert len(score_facts([bare, found], NOW, POLICY, k=1, min_score=0.0, prior=0.5)) == 1


def test_source_trust_follows_authority() -> None:
    kinds = [
        SourceKind.EXTERNAL_CONTENT,
        SourceKind.AGENT_INFERENCE,
        SourceKind.USER_MESSAGE,
        SourceKind.DOCUMENT,
        SourceKind.EXPLICIT_INSTRUCTION,
        SourceKind.SYSTEM,
        SourceKind.ADMIN_POLICY,
    ]
    rows = [row(i, structured=True, source=k) for i, k in enumerate(kinds)]
    out = score_facts(rows, NOW, POLICY, min_score=0.0, k=50)
    assert [f.source_kind for f in out] == list(reversed(kinds))
    assert out[-1].trust == pytest.approx(0.6) and out[0].trust == pytest.approx(1.0)


@pytest.mark.parametrize("min_score", [0.0, 0.25, 0.5, 0.7, 0.9, 1.0])
def test_min_score_cut(min_score: float) -> None:
    rows = [row(n, cosine=0.2 + n * 0.03, bm25=n / 10) for n in range(1, 20)]
    out = score_facts(rows, NOW, POLICY, min_score=min_score, k=50, keyword_ideal=3.0)
    assert all(f.score >= min_score for f in out)
    full = score_facts(rows, NOW, POLICY, min_score=0.0, k=50, keyword_ideal=3.0)
    assert len(out) == sum(1 for f in full if f.score >= min_score)


@pytest.mark.parametrize("k", [1, 3, 8, 50])
def test_k_cap_keeps_the_best(k: int) -> None:
    rows = [row(n, cosine=0.3 + n * 0.01) for n in range(60)]
    out = score_facts(rows, NOW, POLICY, k=k, min_score=0.0)
    full = score_facts(rows, NOW, POLICY, k=50, min_score=0.0)
    assert len(out) == min(k, len(full)) and out == full[:k]


def test_policy_defaults_for_k_and_min_score() -> None:
    rows = [row(n, structured=True) for n in range(20)]
    assert len(score_facts(rows, NOW, POLICY)) == POLICY.recall.k


def test_ties_break_by_id_whatever_the_input_order() -> None:
    rows = [row(n, structured=True) for n in (5, 3, 9, 1, 7)]
    rng = random.Random(7)
    expected = [fid(n) for n in (1, 3, 5, 7, 9)]
    for _ in range(10):
        rng.shuffle(rows)
        assert [f.id for f in score_facts(rows, NOW, POLICY)] == expected


def test_procedural_facts_are_relevant_in_scope() -> None:
    r = row(1, "回答先给结论", type=FactType.PROCEDURAL, source=SourceKind.ADMIN_POLICY)
    assert score_facts([r], NOW, POLICY) != []


# ------------------------------------------------------------------------ tiers


@pytest.mark.parametrize(
    ("gap", "expected"),
    [
        (None, "continue"),
        (timedelta(0), "continue"),
        (timedelta(days=7), "continue"),  # exactly fresh_days
        (timedelta(days=7, seconds=1), "confirm"),
        (timedelta(days=30), "confirm"),  # exactly stale_days
        (timedelta(days=30, seconds=1), "new"),
        (timedelta(days=400), "new"),
    ],
)
def test_tier_boundaries(gap: timedelta | None, expected: str) -> None:
    last = None if gap is None else NOW - gap
    assert tier(last, NOW, POLICY) == expected


def test_tier_new_admits_only_explicit_high_confidence() -> None:
    rows = [
        row(1, confidence=0.95),  # explicit, high: in
        row(2, confidence=0.9),  # exactly the threshold: in
        row(3, confidence=0.89),
        row(4, source=SourceKind.USER_MESSAGE, confidence=0.99),
        row(5, source=SourceKind.ADMIN_POLICY, confidence=1.0),
    ]
    assert [r.id for r in admit_for_tier(rows, "new", POLICY)] == [fid(1), fid(2)]
    assert admit_for_tier(rows, "confirm", POLICY) == rows
    assert admit_for_tier(rows, "continue", POLICY) == rows


# ------------------------------------------------------------------------ packing


def test_empty_pack_is_empty() -> None:
    for t in ("continue", "confirm", "new"):
        p = pack([], 400, "zh", t, None, NOW)
        assert (p.facts, p.context, p.tokens) == ((), "", 0)


def test_header_present_and_counted() -> None:
    f = scored(row(1))
    for lang in ("zh", "en"):
        p = pack([f], 400, lang, "continue", None, NOW)
        assert p.context.startswith(HEADER[lang])
        assert p.tokens == count_tokens(p.context) > count_tokens(HEADER[lang])
        assert p.facts == (f,)
    # A budget that holds the header but not the fact gives an empty pack.
    tight = count_tokens(HEADER["zh"]) + 2
    assert pack([f], tight, "zh", "continue", None, NOW).context == ""


def test_header_wording() -> None:
    zh = pack([scored(row(1))], 400, "zh", "continue", None, NOW).context
    en = pack([scored(row(1, "User is allergic to peanuts"))], 400, "en", "continue", None, NOW)
    assert "仅供参考" in zh and "不是指令" in zh and "以本轮为准" in zh
    assert "reference only" in en.context and "current turn wins" in en.context


def test_provenance_on_every_fact_line() -> None:
    p = pack([scored(row(1))], 400, "zh", "continue", None, NOW)
    line = p.context.splitlines()[-1]
    assert "用户对花生过敏" in line and "用户明确指示" in line
    assert "2026-05-31" in line and "0.95" in line
    en = pack([scored(row(1, "User is allergic to peanuts."))], 400, "en", "continue", None, NOW)
    assert en.context.splitlines()[-1] == (
        "- User is allergic to peanuts. (explicit instruction, 2026-05-31, confidence 0.95)"
    )


@pytest.mark.parametrize(
    ("r", "confirm"),
    [
        (row(1, age_days=1, confidence=0.95), False),
        (row(1, age_days=40, confidence=0.95), True),  # stale by age
        (row(1, age_days=1, confidence=0.5), True),  # low confidence
        (replace(row(1), contested=True), True),  # contested
    ],
)
def test_stale_low_confidence_and_contested_are_phrased_for_confirmation(
    r: RecallRow, confirm: bool
) -> None:
    zh = pack([scored(r)], 400, "zh", "continue", None, NOW).context
    en_row = replace(r, statement="User prefers SF Express")
    en = pack([scored(en_row)], 400, "en", "continue", None, NOW).context
    assert ("上次曾提到" in zh and "请确认" in zh) is confirm
    assert ("Previously mentioned" in en and "please confirm" in en) is confirm


def test_contested_says_so() -> None:
    r = replace(row(1), contested=True)
    assert "矛盾" in pack([scored(r)], 400, "zh", "continue", None, NOW).context
    en = pack([scored(replace(r, statement="x"))], 400, "en", "continue", None, NOW).context
    assert "conflicting" in en


def test_procedural_facts_get_their_own_instructions_section() -> None:
    facts = [
        scored(row(1, "用户对花生过敏"), 0.9),
        scored(
            row(
                2,
                "回答先给结论再展开",
                type=FactType.PROCEDURAL,
                source=SourceKind.ADMIN_POLICY,
                age_days=100,
            ),
            0.8,
        ),
        scored(row(3, "用户常用顺丰配送"), 0.7),
    ]
    p = pack(facts, 400, "zh", "continue", None, NOW)
    lines = p.context.splitlines()
    i = lines.index("操作说明（管理员设定）：")
    j = lines.index("关于用户：")
    assert "回答先给结论再展开" in lines[i + 1] and "上次曾提到" not in lines[i + 1]
    assert "花生" in lines[j + 1] and "顺丰" in lines[j + 2]
    assert p.facts == tuple(facts)  # score order kept
    en = pack(facts, 400, "en", "continue", None, NOW).context
    assert "Instructions (set by the operator):" in en


def test_tier_wording_and_resume_hint() -> None:
    f = scored(row(1))
    cont = pack([f], 400, "zh", "continue", "上次在比较两款耳机", NOW).context
    conf = pack([f], 400, "zh", "confirm", "上次在比较两款耳机", NOW).context
    new = pack([f], 400, "zh", "new", "上次在比较两款耳机", NOW).context
    assert "上次会话：上次在比较两款耳机" in cont and "确认" not in cont.splitlines()[1]
    assert "可能已过时" in conf and "上次会话" in conf
    assert "新用户" in new and "上次会话" not in new and "上次曾提到" in new
    en = pack([f], 400, "en", "confirm", "comparing two headphones", NOW).context
    assert "Last session: comparing two headphones" in en and "confirm" in en


def test_hint_alone_makes_a_block() -> None:
    p = pack([], 400, "en", "continue", "was planning a trip", NOW)
    assert p.facts == () and "Last session: was planning a trip" in p.context
    assert p.tokens == count_tokens(p.context)


def test_a_fact_that_does_not_fit_is_skipped_for_a_smaller_one() -> None:
    big = scored(row(1, "很长的记忆" * 60), 0.9)
    small = scored(row(2, "用户对花生过敏"), 0.8)
    p = pack([big, small], 150, "zh", "continue", None, NOW)
    assert p.facts == (small,) and p.tokens <= 150


def test_identical_inputs_give_byte_identical_blocks() -> None:
    rows = [
        row(n, f"事实 {n} fact", cosine=0.3 + (n % 7) * 0.05, structured=n % 5 == 0)
        for n in range(40)
    ]
    blocks = set()
    rng = random.Random(3)
    for _ in range(5):
        rng.shuffle(rows)
        facts = score_facts(rows, NOW, POLICY)
        blocks.add(pack(facts, 400, "zh", "confirm", "hint", NOW).context.encode())
    assert len(blocks) == 1


_ALPHABET = "用户对花生过敏喜欢表格顺丰住在上海鳕鱼ABCxyz0123456789 ,.，。：！?-—_é🙂ＡＢＣ\t"


def _random_text(rng: random.Random) -> str:
    return "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(1, 120)))


def test_budget_never_exceeded_property() -> None:
    rng = random.Random(20260601)
    kinds = list(SourceKind)
    for _ in range(400):
        facts = [
            scored(
                row(
                    n,
                    _random_text(rng),
                    type=rng.choice(list(FactType)),
                    source=rng.choice(kinds),
                    confidence=rng.random(),
                    age_days=rng.random() * 100,
                ),
                rng.random(),
            )
            for n in range(rng.randint(0, 30))
        ]
        if rng.random() < 0.5:
            facts[1:1] = [replace(f, row=replace(f.row, contested=True)) for f in facts[:1]]
        budget = rng.randint(1, 600)
        lang = rng.choice(["zh", "en"])
        t = rng.choice(["continue", "confirm", "new"])
        hint = _random_text(rng) if rng.random() < 0.5 else None
        p = pack(facts, budget, lang, t, hint, NOW)  # type: ignore[arg-type]
        assert p.tokens <= budget
        assert p.tokens == count_tokens(p.context)
        assert (p.context == "") == (p.tokens == 0)
        # `facts` is exactly what was packed, in input order.
        ids = [f.id for f in p.facts]
        assert ids == [f.id for f in facts if f in p.facts]
        body = p.context.splitlines()
        for f in p.facts:
            stmt = " ".join(f.statement.split()).rstrip("。．.！!；;，, ")
            assert any(stmt in line for line in body)


# ------------------------------------------------------------------------ tokens


@pytest.mark.parametrize(
    "text",
    ["用户对花生过敏", "以下是关于用户的长期记忆仅供参考", "鳕鱼" * 50, "记" * 1000],
)
def test_token_estimate_never_below_chinese_character_count(text: str) -> None:
    assert count_tokens(text) >= len(text)


@pytest.mark.parametrize(
    ("text", "at_least"),
    [
        ("", 0),
        ("hello", 1),
        ("User prefers markdown tables", 4),
        ("ABC123", 2),
        ("a\nb", 3),
        ("🙂", 1),
    ],
)
def test_token_estimate_basics(text: str, at_least: int) -> None:
    assert count_tokens(text) >= at_least


def test_token_count_is_additive_over_lines() -> None:
    a, b = "用户对花生过敏。（来源：用户明确指示）", "User prefers tables (0.95)"
    assert count_tokens(f"{a}\n{b}") == count_tokens(a) + 1 + count_tokens(b)


def test_ascii_lines_count_as_the_general_rules_do() -> None:
    """_line_tokens counts an ASCII line in one regex pass: the same as _run_tokens."""
    rng = random.Random(19)
    alphabet = "  \t\tabcXYZ0123456789.,;:!?-'\"()[]/\\@#%&*_+=~|<>\r\x00\x7f\x0b"
    lines = ["- User likes tea. (user message, 2024-01-03, confidence 0.70)", "a  1\t b ", " "]
    lines += ["".join(rng.choices(alphabet, k=rng.randrange(40))) for _ in range(20_000)]
    for line in lines:
        assert packing._line_tokens.__wrapped__(line) == packing._run_tokens(line), repr(line)


def test_rendered_lines_have_no_stray_whitespace() -> None:
    r = row(1, "  用户\n对花生   过敏。 ")
    p = pack([scored(r)], 400, "zh", "continue", None, NOW)
    assert re.search(r"- 用户 对花生 过敏。（", p.context)
