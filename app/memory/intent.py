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
    en: tuple[str, ...] = ()  # regex fragments, matched as whole words, case-insensitive


INTENTS: tuple[Intent, ...] = (
    Intent(
        ("allergy",),
        zh=("过敏", "过敏原"),
        en=(r"allerg\w*", r"intoleran\w*"),
    ),
    Intent(
        ("dietary_restriction",),
        zh=("我吃什么", "能吃", "不吃", "饮食", "忌口", "素食", "吃素", "清真", "戒口"),
        en=(r"diet(?:ary)?", r"vegetarian", r"vegan", r"halal", r"kosher", r"gluten"),
    ),
    Intent(
        # Food questions must surface allergies and restrictions, not only taste.
        ("preferred_cuisine", "allergy", "dietary_restriction"),
        zh=("吃", "餐厅", "饭店", "菜", "美食", "料理", "外卖", "点餐", "口味", "饭"),
        en=(
            r"eat(?:s|ing)?",
            r"restaurants?",
            r"cuisines?",
            r"food",
            r"meals?",
            r"dinner",
            r"lunch",
            r"breakfast",
            r"recipes?",
            r"cook(?:ing)?",
            r"dish(?:es)?",
        ),
    ),
    Intent(
        ("preferred_output_format",),
        zh=("格式", "表格", "排版", "列表", "要点"),
        en=(r"format(?:ted|ting)?", r"tables?", r"markdown", r"bullets?", r"layout"),
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
        zh=("住在哪", "住哪", "住在", "在哪个城市", "城市", "所在地", "哪里人", "位置"),
        en=(
            r"(?:do )?i live",
            r"live in",
            r"location",
            r"city",
            r"(?:am i|i'm) based",
            r"hometown",
        ),
    ),
    Intent(
        ("tech_stack",),
        zh=("技术栈", "用什么语言写", "编程语言", "框架", "版本", "开发环境", "代码"),
        en=(
            r"stack",
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
        zh=("工作", "职位", "职业", "公司", "上班", "岗位", "做什么的"),
        en=(
            r"jobs?",
            r"my role",
            r"do i work",
            r"work (?:at|for)",
            r"employer",
            r"company",
            r"occupation",
            r"profession",
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
    if intent.en:
        parts.append(r"\b(?:" + "|".join(intent.en) + r")\b")
    return re.compile("|".join(parts), re.IGNORECASE)


_COMPILED: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = tuple(
    (_compile(i), i.predicates) for i in INTENTS
)


def predicates_for_query(query: str) -> list[str]:
    """Predicates the question asks about, in table order, each once ([] when none)."""
    text = nfkc(query).lower()
    seen: dict[str, None] = {}
    for pattern, predicates in _COMPILED:
        if pattern.search(text):
            for p in predicates:
                seen.setdefault(p, None)
    return list(seen)
