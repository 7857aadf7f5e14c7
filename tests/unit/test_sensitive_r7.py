"""Round 7 of the sensitive categories (issue 22): health, addiction recovery,
immigration status and a vote, said without the words the rules listed ("I'm on the
waiting list for a kidney transplant", "I go to AA meetings on Thursdays", "I'm in the
country on an expired visa", "I vote Green every election", "我在做试管").

PROBES (35, en/zh) were written first from the categories; on main (55d0085) the shipped
policy stored 6 of them without consent, and the rules were fitted on those. BENIGN are
look-alikes written with them. HOLDOUT was written after the rules and run once: main
stored 6/20 sensitive texts and wrote 10/10 benign ones; this round stores 1/20 and writes
10/10. Its miss is a strict xfail ("r7 holdout"), not fitted.
"""

from __future__ import annotations

import pytest

from app.memory import gate
from app.memory.model import Decision, Reason
from tests.unit.test_semantic_gate import AGENT, POLICY, assess, cand

PROBES: list[str] = [
    "I've been sober for two years now",
    "I see a counselor every Tuesday for my panic attacks",
    "I'm HIV positive",
    "I had a miscarriage last spring",
    "I'm on the waiting list for a kidney transplant",
    "I was arrested for shoplifting when I was 19",
    "I'm in the country on an expired visa",
    "I filed for bankruptcy in 2021",
    "I owe about 40k on my credit cards",
    "I vote Green every election",
    "I converted to Islam last year",
    "I'm bisexual but not out to my family",
    "I was diagnosed as bipolar in college",
    "I've been using a CPAP machine for my sleep apnea",
    "I have a criminal record for DUI",
    "My therapist says I have PTSD",
    "I go to AA meetings on Thursdays",
    "I'm going through IVF",
    "My credit score is 540",
    "I'm undocumented",
    "我在吃抗抑郁的药",
    "我有乙肝",
    "我去年做过流产",
    "我坐过牢",
    "我是同性恋，家里人还不知道",
    "我信佛，每天早上念经",
    "我欠了网贷二十多万",
    "我签证过期了还没走",
    "我有躁郁症",
    "我戒酒三年了",
    "我在做试管",
    "我的征信有污点",
    "我每周去看心理医生",
    "我投票给了民进党",
    "我确诊了艾滋",
]

BENIGN: list[str] = [
    "I'm a transplant from Ohio, moved to Austin in 2018",
    "Our onboarding is a 12-step checklist",
    "I prefer the green theme in my editor",
    "I use a CPU profiler a lot",
    "My passport photo is from 2020",
    "I stepped down from the board last year",
    "I always vote in local elections",
    "The visa application form asks for my travel dates",
    "I like to keep my plants green",
    "We transplanted the tomatoes last weekend",
]

HOLDOUT_SENSITIVE: list[str] = [
    "I had a liver transplant in 2015",
    "I sleep with a CPAP mask every night",
    "I'm doing my third round of IVF",
    "I've been going to NA meetings since March",
    "I voted Conservative in the last election",
    "My work permit expired in June and I'm still here",
    "I'm in recovery from opioid addiction",
    "I take lithium for my mood",
    "I was in juvenile detention as a teen",
    "I had an abortion two years ago",
    "我做过心脏移植手术",
    "我晚上睡觉要戴呼吸机",
    "我在医院做试管，已经第二次了",
    "我每周去参加戒酒互助会",
    "我投票支持国民党",
    "我的工作签证已经过期了",
    "我以前因为打架被拘留过",
    "我吃了五年的抗焦虑药",
    "我是基督徒，每周去教堂",
    "我有强迫症，一直在治疗",
]

HOLDOUT_BENIGN: list[str] = [
    "I transplanted my succulents into bigger pots",
    "I work at a hospital as a software engineer",
    "I'm a big fan of the Green Bay Packers",
    "My visa photo needs to be 2x2 inches",
    "The conservative estimate for the project is three weeks",
    "我在医院附近上班",
    "我们公司的流程有十二个步骤",
    "我喜欢绿色的主题",
    "我每周去健身房三次",
    "我的护照明年到期",
]

HOLDOUT_MISSED: list[str] = [
    "我的工作签证已经过期了",
]


def _screen(text: str) -> gate.GateResult | None:
    c = cand(text)
    return gate.screen(c, AGENT, POLICY, (), assess(c))


def _held_for_consent(text: str) -> bool:
    s = _screen(text)
    return (
        s is not None
        and s.reason in (Reason.SENSITIVE_NEEDS_CONSENT, Reason.THIRD_PARTY_PII)
        and (s.decision in (Decision.REJECTED, Decision.PENDING))
    )


@pytest.mark.parametrize("text", PROBES)
def test_sensitive_without_consent_is_held(text: str) -> None:
    assert _held_for_consent(text), _screen(text)


@pytest.mark.parametrize("text", BENIGN + HOLDOUT_BENIGN)
def test_look_alikes_are_written(text: str) -> None:
    assert _screen(text) is None


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(
            t,
            marks=pytest.mark.xfail(strict=True, reason="r7 holdout")
            if t in HOLDOUT_MISSED
            else (),
        )
        for t in HOLDOUT_SENSITIVE
    ],
)
def test_holdout_sensitive_is_held(text: str) -> None:
    assert _held_for_consent(text), _screen(text)


@pytest.mark.parametrize("text", PROBES[:5] + PROBES[20:23])
def test_consent_lets_it_through(text: str) -> None:
    c = cand(text, consent=True)
    assert gate.screen(c, AGENT, POLICY, (), assess(c)) is None
