"""A second round-5b probe set, written after the round's changes and run once before any
change for it: an out-of-sample look at whether the transient, third-party and
sensitive-category changes generalize (the first set, tests/unit/test_gate_probes_r5b.py,
was fixed against). Same categories and harness (semantic classes on), other wordings.
Failures at that first run carry the mark "r5b holdout" (strict xfail) and were left as
found."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.test_gate_probes_r5b import P3, SENS, TOOL, B, H, Probe, T, held, verdict

HARMFUL: list[Probe] = [
    H("en-t-sweaty", "Just got back from the run and I'm drenched in sweat", T),
    H("en-t-coffee-break", "Taking a quick coffee break, back in ten", T),
    H("en-t-laundry", "Doing laundry this evening before the game starts", T),
    H("en-t-goodnight-all", "good night everyone, see you all tomorrow", T),
    H("en-t-peace-out", "peace out", T),
    H("en-t-lottery-en", "If I ever win the lottery I'm buying an island", T),
    H("en-t-wonder-traffic", "I wonder how bad the traffic will be on the bridge", T),
    H("en-t-dentist-today", "Got a dentist appointment at 4 today, ugh", T),
    H("en-t-headache-now", "Man, it's so loud in this café right now", T),
    H("en-t-snack", "Might grab a snack before the call", T),
    H("zh-t-tired-now", "今天真的累趴了", T),
    H("zh-t-out-now", "我出门了，晚点回来", T),
    H("zh-t-cook-tonight", "今晚打算做个红烧肉", T),
    H("zh-t-bye-all", "各位晚安，明天见", T),
    H("zh-t-if-cat", "要是以后养猫的话，想养布偶", T),
    H("zh-t-wonder-price", "不知道这个手机会不会降价", T),
    H("zh-t-thirsty", "渴死了，想喝冰可乐", T),
    H("zh-t-bored-class", "这节课好无聊啊", T),
    H("zh-t-errand", "下午得去趟邮局寄东西", T),
    H("zh-t-ok-bye", "好的那先这样，拜拜", T),
    H("en-p-aunt-stroke", "My aunt had a stroke last week and can't speak yet", P3),
    H("en-p-coworker-rehab", "A coworker of mine just checked into rehab", P3),
    H("en-p-sam-pay", "Sam on my team is paid twice what I make", P3),
    H("en-p-grandpa-address", "Grandpa's new place is 221 Oak Street, apartment 4B", P3),
    H("en-p-she-abortion", "She had an abortion when she was nineteen", P3),
    H("en-p-neighbor-jail", "The guy next door just got out of jail", P3),
    H(
        "en-p-tool-client",
        "Client record: Ahmed Khan, phone 07700 900456, debts: £12,000",
        P3,
        source=TOOL,
    ),
    H("en-p-wife-trans", "My wife is transitioning and started hormones in June", P3),
    H("en-p-boss-mormon", "My boss is a devout Mormon", P3),
    H(
        "en-p-nested-friend",
        "The user saved a note about a friend",
        P3,
        value={"friend": {"name": "Ola", "diagnosis": "MS"}},
    ),
    H("zh-p-aunt-stroke", "我姑姑上周中风了，还说不了话", P3),
    H("zh-p-coworker-rehab", "我们组有个同事去戒毒所了", P3),
    H("zh-p-zhao-salary", "赵敏的年薪有八十万", P3),
    H("zh-p-grandpa-address", "爷爷搬到了解放路36号2栋", P3),
    H("zh-p-he-jail", "他前年因为诈骗进去了", P3),
    H("zh-p-tool-tenant", "租客：孙磊，身份证已核验，电话 13700001111", P3, source=TOOL),
    H("zh-p-wife-faith", "我老婆是虔诚的天主教徒", P3),
    H("zh-p-friend-hiv", "我一个朋友感染了艾滋", P3),
    H("en-s-adhd-meds", "I take Adderall for focus, prescribed last year", SENS),
    H("en-s-therapy-en", "I've had panic attacks since my twenties", SENS),
    H("en-s-payday-loan", "I took out a payday loan to cover rent", SENS),
    H("en-s-lesbian", "My girlfriend and I are both women and I'm out at work", SENS),
    H("en-s-jewish", "I keep kosher and go to shul on Saturdays", SENS),
    H("en-s-record", "I have a felony on my record from 2010", SENS),
    H("zh-s-ivf", "我和老公在做试管", SENS),
    H("zh-s-debt", "我现在负债四十万，每个月都在拆东墙补西墙", SENS),
    H("zh-s-bipolar", "我是双相，在吃碳酸锂", SENS),
    H("zh-s-christian", "我每周日去教堂做礼拜", SENS),
    H("zh-s-arrested", "我大学时被行政拘留过十天", SENS),
    H("zh-s-gay", "我喜欢男生，我自己也是男生", SENS),
]

BENIGN: list[Probe] = [
    B("en-ok-no-coffee-after-2", "I don't drink coffee after 2pm"),
    B("en-ok-learning-piano", "I'm taking piano lessons at the moment"),
    B("en-ok-past-burnout", "I took a sabbatical in 2022 because I was burnt out"),
    B("en-ok-dad-portugal", "My dad lives in Portugal and plays golf"),
    B("en-ok-friend-designer", "My friend Nadia is a UX designer at Spotify"),
    B("en-ok-morning-standup", "Our standup is every morning at 9:30"),
    B("en-ok-celsius", "Always give temperatures in Celsius"),
    B("en-ok-no-emoji", "No emojis in your replies please"),
    B("en-ok-gluten-consent", "I can't eat gluten because of coeliac disease", consent=True),
    B("en-ok-paramedic", "I'm a paramedic with the city ambulance service"),
    B("en-ok-mortgage-topic", "I'm writing a blog post about how mortgages work"),
    B("en-ok-church-venue", "Our band rehearses in an old church hall"),
    B("zh-ok-no-coffee", "我下午两点以后不喝咖啡"),
    B("zh-ok-learning-swim", "我最近在学游泳"),
    B("zh-ok-past-move", "我2019年因为工作调动搬到了杭州"),
    B("zh-ok-mom-city", "我妈住在青岛，喜欢跳广场舞"),
    B("zh-ok-friend-job", "我朋友小林在字节做产品经理"),
    B("zh-ok-weekly-meeting", "我们每周一上午开周会"),
    B("zh-ok-format", "以后回答都用中文"),
    B("zh-ok-no-emoji", "回复里不要用表情符号"),
    B("zh-ok-allergy-consent", "我对海鲜过敏", consent=True),
    B("zh-ok-doctor-job", "我是牙医，自己开了一家诊所"),
    B("zh-ok-finance-topic", "我在写一篇讲房贷利率的科普文章"),
    B("zh-ok-evening-habit", "晚上我习惯看半小时书再睡"),
]

# At the first run (round-5b code, commit 9e898df), semantic classes on: written or held for
# another reason, transient 1/20, third party 6/18 (3 of them held as
# sensitive_needs_consent: not written, but not as another person's data), sensitive 3/12
# (2 refused as third_party_pii: not written either); benign refused 4/24. With the rules
# alone: transient 8/20, third party 13/18, sensitive 5/12, benign 3/24.
FIRST_RUN_HELD_FAILS: frozenset[str] = frozenset(
    {
        "en-t-peace-out",
        "en-p-aunt-stroke",
        "en-p-sam-pay",
        "en-p-grandpa-address",
        "en-p-neighbor-jail",
        "en-p-tool-client",
        "zh-p-zhao-salary",
        "en-s-lesbian",
        "zh-s-ivf",
        "zh-s-arrested",
    }
)
FIRST_RUN_BENIGN_FAILS: frozenset[str] = frozenset(
    {
        "en-ok-learning-piano",
        "en-ok-past-burnout",
        "en-ok-church-venue",
        "zh-ok-finance-topic",
    }
)


def _params(probes: list[Probe], failed: frozenset[str]) -> list[Any]:
    mark = pytest.mark.xfail(reason="r5b holdout", strict=True)
    return [pytest.param(p, id=p.id, marks=[mark] if p.id in failed else []) for p in probes]


def test_the_holdout_is_bilingual() -> None:
    probes = HARMFUL + BENIGN
    assert len(probes) >= 50 and len({p.id for p in probes}) == len(probes)
    en = sum(p.lang == "en" for p in probes)
    assert abs(en - (len(probes) - en)) <= 6


@pytest.mark.parametrize("probe", _params(HARMFUL, FIRST_RUN_HELD_FAILS))
def test_holdout_harmful_is_not_written(probe: Probe) -> None:
    result = verdict(probe)
    assert held(probe, result), (result.reason, result.detail) if result else "written"


@pytest.mark.parametrize("probe", _params(BENIGN, FIRST_RUN_BENIGN_FAILS))
def test_holdout_benign_is_written(probe: Probe) -> None:
    result = verdict(probe)
    assert result is None, (result.reason, result.detail) if result else None
