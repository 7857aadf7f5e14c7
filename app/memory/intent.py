"""Recall's structured channel: which predicates a question asks about (zh and en).

A table of intents, each a list of predicates and the words that trigger it. Chinese
triggers match as substrings (no spaces to split on); English triggers match whole words
(plural and -ing/-ed tolerated). To extend: add a row to `INTENTS`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from app.memory.text import nfkc


@dataclass(frozen=True)
class Intent:
    """Questions matching `zh` (substrings) or `en` (words) ask about `predicates`."""

    predicates: tuple[str, ...]
    zh: tuple[str, ...] = ()
    en: tuple[str, ...] = ()  # lower-case regex fragments, matched as whole words, any case
    zh_re: tuple[str, ...] = ()  # regex fragments matched anywhere (Chinese with context)


INTENTS: tuple[Intent, ...] = (
    Intent(
        ("allergy",),
        zh=("过敏", "过敏原"),
        en=(r"allerg\w*", r"intoleran\w*"),
    ),
    Intent(
        # Medicine: a drug allergy is a hard constraint of any answer about what to take.
        ("allergy",),
        zh=(
            "药",
            "抗生素",
            "处方",
            "感冒",
            "发烧",
            "咳嗽",
            "嗓子",
            "喉咙",
            "头疼",
            "头痛",
            "生病",
            "不舒服",
        ),
        en=(
            r"medicines?",
            r"medications?",
            r"meds",
            r"drugs?",
            r"pills?",
            r"tablets?",
            r"antibiotics?",
            r"painkillers?",
            r"prescri\w*",
            r"dos(?:e|age)s?",
            r"\w*cillin",
            r"sore throat",
            r"cough\w*",
            r"fever",
            r"flu",
            r"headaches?",
            r"(?:i'?m|i am|feel(?:ing)?) sick",
        ),
    ),
    Intent(
        ("dietary_restriction",),
        zh=("我吃什么", "能吃", "不吃", "饮食", "忌口", "素食", "吃素", "清真", "戒口"),
        en=(r"diet(?:ary)?", r"vegetarian", r"vegan", r"halal", r"kosher", r"gluten"),
    ),
    Intent(
        # "Is this okay / safe for me?", "can I have it?": a question about the user's
        # own limits, answered by their hard constraints.
        ("allergy", "dietary_restriction"),
        zh=("能不能吃", "可以吃", "能喝", "可以喝", "适合我", "对我安全"),
        en=(
            r"(?:ok(?:ay)?|safe|fine|alright|good) for me",
            r"can i (?:have|eat|drink|take)",
            r"should i (?:eat|drink|take)",
        ),
    ),
    Intent(
        # Buying or bringing something edible: allergies and restrictions, not taste.
        ("allergy", "dietary_restriction"),
        zh=(
            "零食",
            "水果",
            "食品",
            "食材",
            "买菜",
            "生鲜",
            "超市",
            "饮料",
            "蛋糕",
            "甜点",
            "点心",
            "坚果",
            "海鲜",
        ),
        en=(
            r"snacks?",
            r"fruits?",
            r"grocer(?:y|ies)",
            r"groceries",
            r"supermarket",
            r"drinks?",
            r"beverages?",
            r"cakes?",
            r"desserts?",
            r"sweets",
            r"candy",
            r"chocolates?",
            r"nuts?",
            r"ingredients?",
        ),
    ),
    Intent(
        # Food questions must surface allergies and restrictions, not only taste.
        ("preferred_cuisine", "allergy", "dietary_restriction"),
        zh=("餐厅", "饭店", "菜", "美食", "料理", "外卖", "点餐", "口味", "饭", "餐"),
        zh_re=(r"吃(?![^，。,.!?！？]{0,3}药)",),  # 吃 but not 吃药 / 吃什么药 (medicine)
        en=(
            r"eat(?:s|ing)?",
            r"restaurants?",
            r"cuisines?",
            r"food",
            r"meals?",
            r"dinner",
            r"lunch",
            r"breakfast",
            r"brunch",
            r"recipes?",
            r"cook(?:ing)?",
            r"dish(?:es)?",
            r"pasta",
            r"pizza",
            r"salads?",
            r"sandwich(?:es)?",
            r"soups?",
            r"noodles?",
            r"seafood",
            r"shrimps?",
            r"prawns?",
            r"fish",
            r"meat",
            r"chicken",
            r"beef",
            r"pork",
        ),
    ),
    Intent(
        ("preferred_output_format",),
        # Also the requests whose answer has a shape: comparisons, summaries, reports.
        zh=(
            "格式",
            "表格",
            "排版",
            "列表",
            "要点",
            "对比",
            "比较一下",
            "做个比较",
            "总结",
            "汇总",
            "整理",
            "汇报",
            "报告",
            "概括",
            "摘要",
            "归纳",
        ),
        en=(
            r"format(?:ted|ting)?",
            r"tables?",
            r"markdown",
            r"bullets?",
            r"layout",
            r"compar\w*",
            r"versus",
            r"vs",
            r"pros and cons",
            r"summar\w*",
            r"overview",
            r"recap",
            r"reports?",
            r"write-?up",
            r"outline",
        ),
    ),
    Intent(
        ("preferred_language",),
        # Not bare "语言": "用什么语言写" is about the tech stack.
        zh=(
            "什么语言回",
            "语言回复",
            "语言回答",
            "回复语言",
            "用中文",
            "用英文",
            "说什么语言",
            "哪种语言回",
        ),
        en=(r"(?<!programming )languages?", r"reply in", r"respond in", r"answer in"),
    ),
    Intent(
        ("language_spoken",),
        zh=("看懂", "看得懂", "读懂", "听懂", "听得懂", "会说", "会讲", "外语", "母语", "翻译"),
        en=(
            r"(?<!programming )languages?",
            r"speak\w*",
            r"fluent\w*",
            r"translat\w*",
            r"(?:can|could) i (?:read|understand)",
        ),
    ),
    Intent(
        ("delivery_carrier",),
        zh=("快递", "物流", "包裹", "配送", "发货", "顺丰", "寄"),
        en=(
            r"carriers?",
            r"shipping",
            r"ship(?:ped|ment)?",
            r"deliver(?:y|ies|ed)?",
            r"parcels?",
            r"courier",
        ),
    ),
    Intent(
        ("preferred_name",),
        zh=("叫我什么", "我叫什么", "怎么称呼", "称呼", "名字", "叫我"),
        en=(r"my name", r"call me", r"nickname", r"address me"),
    ),
    Intent(
        ("location",),
        # Also the questions whose answer depends on where the user is.
        zh=(
            "住在哪",
            "住哪",
            "住在",
            "在哪个城市",
            "城市",
            "所在地",
            "哪里人",
            "位置",
            "附近",
            "周边",
            "周围",
            "天气",
            "气温",
            "下雨",
            "我这边",
            "我这里",
            "本地",
            "当地",
            "时区",
            "几点",
        ),
        en=(
            r"(?:do )?i live",
            r"live in",
            r"location",
            r"city",
            r"(?:am i|i'm) based",
            r"hometown",
            r"near(?:by| me| here| where i)",
            r"around (?:me|here)",
            r"local(?:ly)?",
            r"weather",
            r"forecast",
            r"temperature",
            r"time zone",
            r"timezone",
            r"what time is it",
        ),
    ),
    Intent(
        ("tech_stack",),
        zh=(
            "技术栈",
            "用什么语言写",
            "编程语言",
            "框架",
            "版本",
            "开发环境",
            "代码",
            "脚本",
            "程序",
            "编程",
            "命令行",
            "接口",
            "数据库",
            "函数",
            "部署",
        ),
        en=(
            r"stack",
            r"code",
            r"coding",
            r"scripts?",
            r"program(?:s|ming)?",
            r"cli",
            r"command[- ]line",
            r"endpoints?",
            r"apis?",
            r"functions?",
            r"databases?",
            r"sql",
            r"deploy\w*",
            r"versions?",
            r"framework",
            r"programming language",
            r"libraries",
            r"library",
            r"toolchain",
            r"python",
            r"java(?:script)?",
            r"typescript",
            r"golang",
            r"rust",
            r"node(?:js)?",
        ),
    ),
    Intent(
        ("job_title", "employer"),
        zh=("工作", "职位", "职业", "公司", "上班", "岗位", "做什么的", "简历", "自我介绍"),
        en=(
            r"jobs?",
            r"my role",
            r"do i work",
            r"work (?:at|for)",
            r"employer",
            r"company",
            r"occupation",
            r"profession",
            r"linkedin",
            r"resumes?",
            r"cv",
            r"headline",
            r"bio",
            r"cover letter",
        ),
    ),
    Intent(
        ("communication_constraint", "contact_channel"),
        zh=("短信", "联系", "通知", "邮件", "电话", "表情", "提醒", "打扰"),
        en=(
            r"contact(?:ed)?",
            r"emojis?",
            r"sms",
            r"text me",
            r"texting",
            r"e-?mails?",
            r"phone",
            r"notif\w*",
            r"remind\w*",
        ),
    ),
)


def _compile(intent: Intent) -> re.Pattern[str]:
    parts = [re.escape(w) for w in intent.zh]
    parts.extend(intent.zh_re)
    if intent.en:
        parts.append(r"\b(?:" + "|".join(intent.en) + r")\b")
    # Case-sensitive: predicates_for_query matches lowercased text. On every character
    # NFKC + lower() can yield, this matches as re.IGNORECASE did once a dotless ı (which
    # IGNORECASE took for i) is read as i (checked atom by atom), at ~60 % of the cost.
    # So the fragments are written in lower case (tests/unit/test_recall_core.py).
    return re.compile("|".join(parts))


_COMPILED: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = tuple(
    (_compile(i), i.predicates) for i in INTENTS
)


def predicates_for_query(query: str) -> list[str]:
    """Predicates the question asks about, in table order, each once ([] when none)."""
    text = nfkc(query).lower().replace("ı", "i")
    seen: dict[str, None] = {}
    for pattern, predicates in _COMPILED:
        if pattern.search(text):
            for p in predicates:
                seen.setdefault(p, None)
    return list(seen)
