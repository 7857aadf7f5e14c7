"""The pure parts of episodic memory and ranking: transience by sentence, fillers, time
spans named in a query, BM25 evidence, the temporal channel, near-duplicate removal, and
the block saying when an episode happened."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from app.memory import scoring
from app.memory.detectors import find_transient, is_filler
from app.memory.model import FactType, SourceKind
from app.memory.packing import pack
from app.memory.policy import Policy
from app.memory.scoring import RecallRow, keyword_evidence, score_facts
from app.memory.timeref import window

POLICY = Policy.model_validate(
    yaml.safe_load((Path(__file__).parents[2] / "config" / "policy.yaml").read_text("utf-8"))
)
NOW = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)  # a Wednesday


def row(n: int, statement: str, **channels: object) -> RecallRow:
    return RecallRow(
        id=uuid.UUID(int=n),
        statement=statement,
        predicate=None,
        value=None,
        type=FactType.EPISODIC,
        scope="global",
        source_kind=SourceKind.USER_MESSAGE,
        confidence=0.8,
        valid_from=NOW,
        last_observed_at=NOW,
        created_at=NOW,
        **channels,  # type: ignore[arg-type]
    )


# ------------------------------------------------------------------- transience


@pytest.mark.parametrize(
    "text",
    [
        "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
        "Melanie: Wow! I just signed up for a pottery class. How about you?",
        "I adopted a puppy last week, I'm so excited!",
        "我昨天去了趟杭州，西湖边骑车骑了一下午。你呢？",
        "哈哈，我上个月终于拿到驾照了！",
        "This time we took the night train to Vienna.",
    ],
)
def test_events_are_episodes(text: str) -> None:
    assert find_transient(text, episode=True) == []


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        ("Caroline: Hey Mel! Good to see you! How have you been?", "greeting"),
        ("Wow, that's awesome! So proud of you!", "filler"),
        ("Thanks, Mel!", "greeting"),
        ("What got you into running?", "question"),
        ("哈哈，太棒了！", "filler"),
        ("I'm so tired today.", "mood"),
        ("If I ever win the lottery I would buy a boat.", "hypothetical"),
        ("🙂🙂", "filler"),
    ],
)
def test_greetings_fillers_questions_and_moods_stay_refused(text: str, detail: str) -> None:
    found = find_transient(text, episode=True)
    assert len(found) == 1 and found[0].reason == "not_reusable"
    # a vocative name makes "Hey Mel!" a filler rather than a bare greeting
    assert found[0].detail == detail or {found[0].detail, detail} <= {"greeting", "filler"}


def test_a_one_off_refuses_a_preference_but_not_an_episode() -> None:
    text = "I like tables. Just this once use bullets."
    assert [f.detail for f in find_transient(text)] == ["one_off"]
    assert [f.detail for f in find_transient("If I ever move, I'd pick Lisbon.", episode=True)] == [
        "hypothetical"
    ]
    assert find_transient("This time we took the train.", episode=True) == []
    # a fact is judged whole: a question in it makes it transient; an episode by clause
    assert [f.detail for f in find_transient("I love hiking, what about you?")] == ["question"]
    assert find_transient("I went hiking, what about you?", episode=True) == []


@pytest.mark.parametrize(
    ("text", "filler"),
    [
        ("That's so cool!", True),
        ("Keep up the great work!", True),
        ("Thanks, Mel!", True),
        ("I love painting", False),
        ("Good luck with the interview!", False),
        ("v3.12", False),
        ("真不错！", True),
        ("我买了新车", False),
    ],
)
def test_is_filler(text: str, filler: bool) -> None:
    assert is_filler(text) is filler


# ------------------------------------------------------------------- time spans


def day(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "span"),
    [
        ("what did I do yesterday?", (day(2026, 12, 1), day(2026, 12, 2))),
        ("where did we go last week", (day(2026, 11, 23), day(2026, 11, 30))),
        ("anything this week?", (day(2026, 11, 30), day(2026, 12, 7))),
        ("last month", (day(2026, 11, 1), day(2026, 12, 1))),
        ("3 days ago", (day(2026, 11, 29), day(2026, 11, 30))),
        ("two weeks ago", (day(2026, 11, 16), day(2026, 11, 23))),
        ("what happened in May?", (day(2026, 5, 1), day(2026, 6, 1))),
        ("last year", (day(2025, 1, 1), day(2026, 1, 1))),
        ("last weekend", (day(2026, 11, 28), day(2026, 11, 30))),
        ("上个月我去了哪里", (day(2026, 11, 1), day(2026, 12, 1))),
        ("我昨天吃了什么", (day(2026, 12, 1), day(2026, 12, 2))),
        ("上周末", (day(2026, 11, 28), day(2026, 11, 30))),
        ("三天前", (day(2026, 11, 29), day(2026, 11, 30))),
        ("两周前见过谁", (day(2026, 11, 16), day(2026, 11, 23))),
        ("5月份的旅行", (day(2026, 5, 1), day(2026, 6, 1))),
        ("去年", (day(2025, 1, 1), day(2026, 1, 1))),
    ],
)
def test_relative_dates_resolve_against_now(query: str, span: tuple[datetime, datetime]) -> None:
    assert window(query, NOW) == span


@pytest.mark.parametrize(
    "query", ["my 2 cats", "what is my favourite colour?", "5月12日", "I may come", ""]
)
def test_no_span_without_a_time_expression(query: str) -> None:
    assert window(query, NOW) is None


# ------------------------------------------------------------------- scoring


def test_keyword_evidence_is_linear_in_bm25_and_absolute_across_queries() -> None:
    # within a query: more BM25, more evidence; the best match of a query it fully
    # covers is strong, the best match of a query it barely covers is weak
    assert keyword_evidence(4.0, 4.0, 4.0) > keyword_evidence(2.0, 4.0, 4.0) > 0
    assert keyword_evidence(4.0, 4.0, 4.0) == pytest.approx(0.95)
    assert keyword_evidence(1.0, 1.0, 10.0) < 0.15
    assert keyword_evidence(None, 4.0, 4.0) == keyword_evidence(0.0, 4.0, 4.0) == 0.0


def test_temporal_channel_for_an_episode_inside_the_span() -> None:
    inside = row(1, "We hiked Mount Tam", occurred_at=NOW - timedelta(days=7), cosine=0.5)
    outside = row(2, "We hiked the Dolomites", occurred_at=NOW - timedelta(days=400), cosine=0.5)
    span = window("where did we hike last week?", NOW)
    out = score_facts([inside, outside], NOW, POLICY, min_score=0.0, window=span)
    assert out[0].id == inside.id and "temporal" in out[0].channels
    assert "temporal" not in out[1].channels and out[0].score > out[1].score


def test_near_duplicates_leave_room_for_other_facts() -> None:
    rows = [
        row(1, "Caroline went to a support group on Friday.", cosine=0.80),
        row(2, "Caroline went to a support group on Friday!", cosine=0.79),
        row(3, "Caroline is researching adoption agencies.", cosine=0.60),
    ]
    plain = score_facts(rows, NOW, POLICY, k=2, min_score=0.0)
    assert [f.id for f in plain] == [rows[0].id, rows[1].id]
    diverse = score_facts(rows, NOW, POLICY, k=2, min_score=0.0, diverse_top=True)
    assert [f.id for f in diverse] == [rows[0].id, rows[2].id]


def test_block_says_when_an_episode_happened() -> None:
    ep = row(1, "Caroline went to a support group", occurred_at=day(2023, 5, 7), cosine=0.8)
    plain = row(2, "Caroline likes tea", cosine=0.7)
    scored = score_facts([ep, plain], NOW, POLICY, min_score=0.0)
    en = pack(scored, 400, "en", "continue", None, NOW).context
    zh = pack(scored, 400, "zh", "continue", None, NOW).context
    assert "Caroline went to a support group. (happened 2023-05-07; user message" in en
    assert "Caroline likes tea. (user message" in en
    assert "发生于 2023-05-07" in zh


def test_episode_context_lifts_what_happened_with_a_strong_match() -> None:
    """The reply to a matching turn shares few words with the question; having happened
    in the same episode as the strong match, it is lifted above an equally weak match
    from another day (scoring.EPISODE_CONTEXT)."""
    session = NOW - timedelta(days=30)
    other_day = NOW - timedelta(days=60)
    rows = [
        row(1, "Caroline: What got you into running?", bm25=4.0, occurred_at=session),
        row(2, "Melanie: I started to clear my head.", cosine=0.35, occurred_at=session),
        row(3, "Melanie: I like rainy days.", cosine=0.35, occurred_at=other_day),
    ]
    ranked = score_facts(rows, NOW, POLICY, k=3, min_score=0.0, keyword_ideal=4.0)
    assert [f.id for f in ranked] == [rows[0].id, rows[1].id, rows[2].id]
    by_id = {f.id: f for f in ranked}
    assert by_id[rows[1].id].score > by_id[rows[2].id].score
    # without the strong match the two weak ones score on their own: the gain is
    # EPISODE_CONTEXT × the strong match's score, for the same episode only
    alone = {f.id: f.score for f in score_facts(rows[1:], NOW, POLICY, k=2, min_score=0.0)}
    assert by_id[rows[2].id].score == alone[rows[2].id]
    strong = score_facts(rows[:1], NOW, POLICY, k=1, min_score=0.0, keyword_ideal=4.0)[0]
    lift = scoring.EPISODE_CONTEXT * strong.score  # its own score, before its own gain
    assert by_id[rows[1].id].score == pytest.approx(alone[rows[1].id] + lift, abs=1e-5)
    assert by_id[rows[1].id].score > alone[rows[1].id] + 0.1  # the lever is on


def test_episode_context_never_admits_a_fact_below_the_cut() -> None:
    """The gain orders what passed `min_score`; it does not let a weak neighbour in."""
    session = NOW - timedelta(days=3)
    rows = [
        row(1, "We hiked the Dolomites.", bm25=4.0, occurred_at=session),
        row(2, "Nice weather today.", cosine=0.25, occurred_at=session),
    ]
    weak = score_facts(rows[1:], NOW, POLICY, k=5, min_score=0.0)[0].score
    cut = weak + 0.01
    out = score_facts(rows, NOW, POLICY, k=5, min_score=cut, keyword_ideal=4.0)
    assert [f.id for f in out] == [rows[0].id]


def test_episode_context_needs_the_same_episode_and_an_episode() -> None:
    """Hours apart, or a semantic fact (no episode), gains nothing."""
    far = [
        row(1, "Caroline: What got you into running?", bm25=4.0, occurred_at=NOW),
        row(
            2,
            "Melanie: I started to clear my head.",
            cosine=0.35,
            occurred_at=NOW - timedelta(hours=5),
        ),
    ]
    alone = score_facts(far[1:], NOW, POLICY, k=1, min_score=0.0)[0].score
    both = {
        f.id: f.score for f in score_facts(far, NOW, POLICY, k=2, min_score=0.0, keyword_ideal=4.0)
    }
    assert both[far[1].id] == alone
    from dataclasses import replace

    semantic = [far[0], replace(far[1], occurred_at=NOW, type=FactType.SEMANTIC)]
    alone = score_facts(semantic[1:], NOW, POLICY, k=1, min_score=0.0)[0].score
    both = {
        f.id: f.score
        for f in score_facts(semantic, NOW, POLICY, k=2, min_score=0.0, keyword_ideal=4.0)
    }
    assert both[semantic[1].id] == alone


def test_a_transcript_neighbour_of_a_strong_match_is_lifted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Within one session date every turn shares `occurred_at`; the line written right
    after a strong match (its neighbour) gains NEIGHBOUR_CONTEXT × the match's score over
    an equally weak line of the same session that is not next to it."""
    monkeypatch.setattr(scoring, "LENGTH_PRIOR", 0.0)  # the gain's arithmetic alone
    session = NOW - timedelta(days=30)
    ids = [uuid.UUID(int=n) for n in (1, 2, 3)]
    rows = [
        row(
            1,
            "Joanna: Could you share that ice cream recipe?",
            bm25=4.0,
            occurred_at=session,
            neighbours=(ids[1],),
        ),
        row(
            2,
            "Nate: Sure thing! I can give it to you tomorrow.",
            cosine=0.35,
            occurred_at=session,
            neighbours=(ids[0], ids[2]),
        ),
        row(
            3,
            "Nate: The weather was lovely at the lake.",
            cosine=0.35,
            occurred_at=session,
            neighbours=(ids[1],),
        ),
    ]
    out = {
        f.id: f.score for f in score_facts(rows, NOW, POLICY, k=3, min_score=0.0, keyword_ideal=4.0)
    }
    no_neighbours = [replace(r, neighbours=()) for r in rows]
    base = {
        f.id: f.score
        for f in score_facts(no_neighbours, NOW, POLICY, k=3, min_score=0.0, keyword_ideal=4.0)
    }
    # each gains NEIGHBOUR_CONTEXT × the best score of its neighbours before the gain
    for i, best in ((0, base[ids[1]]), (1, base[ids[0]]), (2, base[ids[1]])):
        assert out[ids[i]] == pytest.approx(
            base[ids[i]] + scoring.NEIGHBOUR_CONTEXT * best, abs=1e-5
        )
    # the reply next to the strong match now leads the other weak line clearly
    assert out[ids[1]] - out[ids[2]] > 0.03 > base[ids[1]] - base[ids[2]]


def test_a_transcript_neighbour_is_never_admitted_by_its_neighbour() -> None:
    """The gain orders what passed `min_score` on its own; a neighbour below the cut
    stays out, and one that is not among the kept facts lifts nothing."""
    ids = [uuid.UUID(int=n) for n in (1, 2)]
    rows = [
        row(1, "We hiked the Dolomites.", bm25=4.0, occurred_at=NOW, neighbours=(ids[1],)),
        row(2, "Nice weather today.", cosine=0.25, occurred_at=NOW, neighbours=(ids[0],)),
    ]
    weak = score_facts(rows[1:], NOW, POLICY, k=5, min_score=0.0)[0].score
    out = score_facts(rows, NOW, POLICY, k=5, min_score=weak + 0.01, keyword_ideal=4.0)
    assert [f.id for f in out] == [ids[0]]
    alone = score_facts(rows[:1], NOW, POLICY, k=5, min_score=0.0, keyword_ideal=4.0)
    assert out[0].score == alone[0].score  # its neighbour was cut: no gain either way


def test_a_line_that_says_more_leads_an_equally_matched_short_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two lines of one session at the same cosine: the one that tells something leads
    the short reaction (scoring.LENGTH_PRIOR: × (2ℓ / (ℓ + ℓ̃)) ** LENGTH_PRIOR, ℓ̃ the
    candidate episodes' median length), whatever their ids."""
    session = NOW - timedelta(days=30)
    short = "Joanna: Wow, great job! What was it called?"
    long = "Joanna: I finally finished my first full screenplay and printed it last Friday."
    middle = "Joanna: I have been busy with writing projects lately."
    rows = [
        row(1, short, cosine=0.4, occurred_at=session),
        row(2, long, cosine=0.4, occurred_at=session),
        row(3, middle, cosine=0.3, occurred_at=session),
    ]
    ranked = score_facts(rows, NOW, POLICY, k=3, min_score=0.0)
    assert [f.id for f in ranked[:2]] == [rows[1].id, rows[0].id]
    by_id = {f.id: f.score for f in ranked}
    monkeypatch.setattr(scoring, "LENGTH_PRIOR", 0.0)
    plain = score_facts(rows, NOW, POLICY, k=3, min_score=0.0)
    assert [f.id for f in plain[:2]] == [rows[0].id, rows[1].id]  # a tie, broken by id
    own = {f.id: f.score for f in plain}
    pivot = len(middle)  # the median of the three
    for r in rows:
        factor = (2 * len(r.statement) / (len(r.statement) + pivot)) ** 0.5
        assert by_id[r.id] == pytest.approx(own[r.id] * factor, abs=1e-5)
    assert by_id[rows[2].id] == own[rows[2].id]  # at the median: unchanged


def test_the_length_prior_orders_episodes_only_and_never_admits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Applied after the cut: a long line below `min_score` stays out; semantic facts
    keep their own score whatever their length."""
    rows = [
        row(1, "Melanie: " + "we walked along the lake for hours " * 4, cosine=0.3),
        row(2, "Melanie: Nice!", cosine=0.3),
        row(3, "Caroline: Cool!", cosine=0.3),
    ]
    own = score_facts(rows[:1], NOW, POLICY, k=1, min_score=0.0)[0].score
    ranked = score_facts(rows, NOW, POLICY, k=3, min_score=0.0)
    assert ranked[0].id == rows[0].id and ranked[0].score > own  # above the median: lifted
    assert score_facts(rows, NOW, POLICY, k=3, min_score=own + 0.01) == []
    semantic = [replace(r, type=FactType.SEMANTIC) for r in rows]
    with_prior = score_facts(semantic, NOW, POLICY, k=3, min_score=0.0)
    monkeypatch.setattr(scoring, "LENGTH_PRIOR", 0.0)
    assert score_facts(semantic, NOW, POLICY, k=3, min_score=0.0) == with_prior


@pytest.mark.parametrize(
    ("query", "asks"),
    [
        ("When did Caroline go to the LGBTQ support group?", True),
        ("What date is Melanie's pottery class?", True),
        ("How long ago did they move?", True),
        ("林晓是哪天把豆包领养回家的？", True),
        ("陈默是什么时候搬到滨江的新家的？", True),
        ("What did Caroline paint?", False),
        ("林晓给领养的猫起了什么名字？", False),
    ],
)
def test_asks_when(query: str, asks: bool) -> None:
    from app.memory.timeref import asks_when

    assert asks_when(query) is asks


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("Caroline: I went to a LGBTQ support group yesterday.", True),
        ("Melanie: We're going camping next month!", True),
        ("I ran a charity race last Saturday.", True),
        ("林晓: 领回来啦！！上周日去的救助站", True),
        ("林晓: 报了！7月13号，公司游泳社组织的", True),
        ("陈默: 对了，我周二过生日", True),
        ("Caroline: I love painting sunsets.", False),
        ("林晓: 叫豆包，因为它缩成一团的时候特别像一个豆沙包", False),
    ],
)
def test_mentions_time(text: str, says: bool) -> None:
    from app.memory.timeref import mentions_time

    assert mentions_time(text) is says


def test_a_when_question_lifts_the_found_fact_that_says_when() -> None:
    """ "When did…" is answered by the turn that says when, which shares fewer words with
    the question than the turns that talk about the thing (scoring.WHEN_EVIDENCE)."""
    rows = [
        row(1, "Melanie: Swimming is so relaxing, I love swimming.", bm25=4.0),
        row(2, "Melanie: I signed up for swimming lessons last week!", bm25=3.0),
        row(3, "Melanie: My kids were here last week.", cosine=0.21),
    ]
    q = "When did Melanie start swimming lessons?"
    # a long question: its best match holds part of it (keyword evidence below the cap)
    plain = score_facts(rows, NOW, POLICY, k=3, min_score=0.0, keyword_ideal=10.0)
    assert plain[0].id == rows[0].id
    lifted = score_facts(rows, NOW, POLICY, k=3, min_score=0.0, keyword_ideal=10.0, asks_when=True)
    assert lifted[0].id == rows[1].id and "temporal" in lifted[0].channels
    assert q  # the question is only for the reader: the caller detects `asks_when`
    # never alone: a fact no channel found gains nothing, and one the cut drops stays out
    unfound = row(4, "Melanie: It rained yesterday.")
    assert score_facts([unfound], NOW, POLICY, min_score=0.0, asks_when=True) == []
    by_id = {f.id: f for f in lifted}
    assert by_id[rows[2].id].score < 0.25 + scoring.WHEN_EVIDENCE  # weak match stays weak


@pytest.mark.parametrize(
    ("line", "who"),
    [
        ("Caroline: I went to a support group yesterday.", "caroline"),
        ("林晓: 我上周终于报了个游泳班！", "林晓"),
        ("Dr. Smith: take one a day", "dr. smith"),
        ("I went to a support group yesterday.", None),
        ("https://example.com: a link", None),
    ],
)
def test_speaker_of_a_transcript_line(line: str, who: str | None) -> None:
    from app.memory.text import speaker

    assert speaker(line) == who


@pytest.mark.parametrize(
    ("query", "name", "named"),
    [
        ("What did Caroline paint?", "caroline", True),
        ("What is Caroline's identity?", "caroline", True),
        ("What did Carolines do?", "caroline", False),  # a word, not a prefix
        ("林晓为什么想换工作？", "林晓", True),
        ("陈默的科目一考了多少分？", "林晓", False),
    ],
)
def test_names(query: str, name: str, named: bool) -> None:
    from app.memory.text import names

    assert names(query, name) is named


def test_a_question_about_someone_lifts_what_they_said() -> None:
    """ "What does Melanie…" is answered by Melanie's lines; the lines spoken to her hold
    her name as often (scoring.SUBJECT_EVIDENCE)."""
    rows = [
        row(1, "Caroline: Wow Melanie, camping with kids sounds fun!", bm25=4.0),
        row(2, "Melanie: We went camping at the beach last month.", bm25=3.0),
    ]
    q = "Where has Melanie camped?"
    # a long question: its best match holds part of it (keyword evidence below the cap)
    plain = score_facts(rows, NOW, POLICY, k=2, min_score=0.0, keyword_ideal=10.0)
    assert plain[0].id == rows[0].id
    lifted = score_facts(rows, NOW, POLICY, k=2, min_score=0.0, keyword_ideal=10.0, query=q)
    assert [f.id for f in lifted] == [rows[1].id, rows[0].id]
    # the other speaker's line scores as without the question
    assert lifted[1].score == plain[0].score
    # a question naming nobody, or a fact that is no transcript line: no lift
    nobody = score_facts(rows, NOW, POLICY, k=2, min_score=0.0, keyword_ideal=10.0, query="Where?")
    assert [f.score for f in nobody] == [f.score for f in plain]
    own = [replace(rows[1], statement="We went camping at the beach last month.")]
    alone = score_facts(own, NOW, POLICY, k=1, min_score=0.0, keyword_ideal=10.0)
    assert score_facts(own, NOW, POLICY, k=1, min_score=0.0, keyword_ideal=10.0, query=q) == alone


def test_the_subject_lift_never_admits_a_fact_below_the_cut() -> None:
    """The gain orders what passed `min_score`; a weak line of the person asked about
    stays out."""
    weak = row(1, "Melanie: Nice weather today.", cosine=0.25)
    own = score_facts([weak], NOW, POLICY, k=1, min_score=0.0)[0].score
    q = "What does Melanie like?"
    assert score_facts([weak], NOW, POLICY, k=1, min_score=own + 0.01, query=q) == []
    lifted = score_facts([weak], NOW, POLICY, k=1, min_score=own, query=q)
    assert lifted[0].score > own


def test_the_subject_of_a_fact_written_from_a_line_is_its_speaker() -> None:
    """An observation says "Caroline …" in the third person; the line it was written
    from (its evidence) names her as the speaker (scoring.subject)."""
    obs = replace(
        row(1, "Caroline attended a pride parade.", bm25=3.0),
        type=FactType.SEMANTIC,
        evidence_head="Caroline: I went to a pride parade last week!",
    )
    other = replace(
        row(2, "Melanie thinks Caroline's parade was brave.", bm25=4.0),
        type=FactType.SEMANTIC,
        evidence_head="Melanie: Caroline, that parade was so brave",
    )
    assert scoring.subject(obs) == "caroline" and scoring.subject(other) == "melanie"
    assert scoring.subject(row(3, "Caroline: hi")) == "caroline"
    assert scoring.subject(row(4, "Caroline attended a parade.")) is None
    q = "What events has Caroline attended?"
    plain = score_facts([obs, other], NOW, POLICY, k=2, min_score=0.0, keyword_ideal=10.0)
    assert plain[0].id == other.id
    lifted = score_facts([obs, other], NOW, POLICY, k=2, min_score=0.0, keyword_ideal=10.0, query=q)
    assert lifted[0].id == obs.id


@pytest.mark.parametrize(
    ("line", "who"),
    [
        ("Caroline: I went to a support group", "caroline"),
        ("林晓: 我报了游泳班", "林晓"),
        # a one-letter label or a heading names nobody a question could ask about
        ("A: sure", None),
        ("我： 好的", None),
        ("Note: the API changed", None),
        ("User: hello", None),
        ("no label here", None),
    ],
)
def test_labels_that_name_nobody(line: str, who: str | None) -> None:
    from app.memory.text import speaker

    assert speaker(line) == who
