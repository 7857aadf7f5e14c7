"""The Chinese matchers: a screened sentence (instruction already peeled) → hits."""

from __future__ import annotations

import re

from app.memory.model import FactType
from app.memory.prefilter import rx
from app.memory.text import detect_lang, segment
from app.providers import extract_prefs
from app.providers.rules.bilingual import format_hit
from app.providers.rules.hits import CONF_DIRECT, CONF_IMPLIED, CONF_PLAIN, CONF_RECENT, RECENT, Hit
from app.providers.rules.text import CLAUSE, TRAILING_PUNCT, clean_zh, negated_before, split_list_zh
from app.providers.rules.vocabulary import (
    ANY_CARRIER,
    CUISINES_ZH,
    FORMATS_ZH,
    JOB_NOUNS_ZH,
    LANG_ZH_ALT,
    LANGUAGES,
    PLACES_ZH,
    may_name_carrier,
)

_NEG_ZH = (
    r"(?:千万别|永远别|绝对不要|永远不要|千万不要|不要再|别再|不准再|"
    r"不要|别|不许|禁止|不准|请勿|勿)"
)
_CONSTRAINT_VERBS_ZH = (
    r"(?:发|打|联系|称呼|叫|用|使用|回复|推送|提醒|加|带|推荐|写|说|提|问|催|安排|约|在|给|打扰|群发|"
    r"@|抄送|超过|晚于|早于|周末|半夜|晚上|早上)"
)
_CONSTRAINT_ZH = rx(
    r"^(?P<pre>[^我他她]{0,12}?)(?:请|你|也|都|再|一律|千万)*"
    + _NEG_ZH
    + r"(?:在)?(?:给我|跟我|对我|和我|帮我)?"
    r"(?P<rest>" + _CONSTRAINT_VERBS_ZH + r".{0,40})$"
)


# "别再/不要再/永远别…": a standing request even without "以后" (written as explicit).
_STANDING_NEG_ZH = rx(r"再|永远|千万别|绝对不要|千万不要")
# "现在先别发", "等一下别发", "还不要发": about the message at hand, not a standing rule.
_ONE_OFF_ZH = rx(r"先|现在|马上|立刻|等一?下|等会|稍后|还|这条|这封|这个|那个")
_ONE_OFF_OBJ_ZH = rx(r"^.{1,2}?(?:这|那)(?:个|封|条|份|篇|张)|^.{1,2}?它")


def constraint_zh(s: str) -> list[Hit]:
    hits = []
    for clause in CLAUSE.split(s):
        clause = TRAILING_PUNCT.sub("", clause.strip())
        m = _CONSTRAINT_ZH.match(clause)
        if not m:
            continue
        rest = re.sub(r"(?:了|啊|哦|啦|呀)+$", "", m.group("rest"))
        if rest.startswith(("吃", "喝")) or (may_name_carrier(rest) and ANY_CARRIER.search(rest)):
            continue
        pre = re.sub(r"^(?:以后|今后|从现在起|从今以后|往后|请|你)+", "", m.group("pre")).strip()
        if _ONE_OFF_ZH.search(pre) or _ONE_OFF_OBJ_ZH.match(rest):
            continue
        if extract_prefs.orders_or_claims(rest, addressing=False):
            continue  # "别问我要验证码": a waived check, not a taste
        value = f"{pre}不要{rest}"
        standing = bool(_STANDING_NEG_ZH.search(clause[m.end("pre") : m.start("rest")]))
        hits.append(
            Hit(
                FactType.SEMANTIC,
                "communication_constraint",
                value,
                f"用户要求{value.replace('我', '其')}",
                CONF_DIRECT,
                standing,
            )
        )
    return hits


_ALLERGY_ZH = (
    rx(
        r"(?:^|我|本人)(?:也|一直|从小|都|有点|比较|严重|非常|特别|好像|可能|也许|大概|似乎|应该|貌似)*对(?P<x>[^,，。]{1,20}?)"
        r"(?:都|也|有点|比较|严重|非常|特别|会)*(?<![不没])过敏"
    ),
    rx(r"(?:^|我)(?:有|患有)(?P<x>[^,，。对]{1,10}?)过敏"),
    rx(r"^我(?P<x>[\u4e00-\u9fff]{1,6}?)过敏$"),
    rx(
        r"(?:^|我)(?:不能吃|不能碰|碰不得|吃不了)(?P<x>[^,，。]{1,10}?)[,，]?(?:会|因为|要|一吃就|吃了就)过敏"
    ),
)


def allergy_zh(s: str) -> list[Hit]:
    for pattern in _ALLERGY_ZH:
        m = pattern.search(s)
        if m:
            items = split_list_zh(m.group("x"))
            return [
                Hit(FactType.SEMANTIC, "allergy", item, f"用户对{item}过敏", CONF_DIRECT)
                for item in items
                if not re.search(r"不|没", item)
            ]
    return []


_VEG_ZH = rx(
    r"(?:^|我)(?:是|一直|平时|现在|从来|都|只|也|长期)*(?:吃素|吃斋|素食者|素食主义者|吃素的)"
)
_VEGAN_ZH = rx(r"(?:^|我)(?:是|一直|平时|现在|只|也|吃)*(?:吃全素|纯素|严格素食)")
_HALAL_ZH = rx(r"(?:^|我)(?:只)?吃清真")
_NOT_EAT_ZH = rx(
    r"(?:^|我)(?:平时|从来|一直|也|都|基本|完全|从|向来)*(?P<verb>不吃|不能吃|从不吃|不喝|不能喝|从不喝|忌)(?P<x>[^,，。]{1,10})"
)


# Named diets ("我在生酮饮食", "我一直低碳水"): surface → value.
_DIET_KINDS_ZH: tuple[tuple[str, str], ...] = (
    (r"生酮(?:饮食)?", "生酮饮食"),
    (r"低碳水(?:化合物)?(?:饮食)?|低碳饮食", "低碳水饮食"),
    (r"地中海饮食", "地中海饮食"),
    (r"(?:间歇性|间歇|轻)断食|16\s*[:：比]\s*8\s*断食", "间歇性断食"),
    (r"无麸质(?:饮食)?", "无麸质"),
    (r"低脂(?:饮食)?", "低脂饮食"),
    (r"低盐(?:饮食)?|低钠(?:饮食)?", "低盐饮食"),
)
_DIET_KIND_ZH = rx(
    # bounded: "坚持" is in both groups, and unbounded runs of it were quadratic
    r"(?:我(?:(?:现在|目前|一直|最近|这段时间|这阵子|长期|平时|也|都|还|已经|坚持){0,4})"
    r"(?:在|正在|坚持|吃|做|搞|采用|执行|实行|走|开始|保持|遵循){0,3}|"
    r"^(?:(?:现在|目前|一直|最近|这段时间|这阵子|长期|平时|也|都|还|已经|坚持){0,4})"
    r"(?:在|正在|坚持|吃|做|搞|采用|执行|实行|走|开始|保持|遵循){1,3})"
    r"(?P<d>" + "|".join(p for p, _ in _DIET_KINDS_ZH) + r")"
)


def _diet_kind_zh(s: str) -> list[Hit]:
    m = _DIET_KIND_ZH.search(s)
    if not m or negated_before(s, m.start("d")):
        return []
    d = m.group("d")
    value = next(v for p, v in _DIET_KINDS_ZH if re.fullmatch(p, d))
    conf = CONF_RECENT if RECENT.search(s) else CONF_PLAIN
    return [Hit(FactType.SEMANTIC, "dietary_restriction", value, f"用户采用{value}", conf)]


def diet_zh(s: str) -> list[Hit]:
    if "过敏" in s:
        return []  # an allergy, said with 不能吃: the allergy matcher owns it
    if _VEGAN_ZH.search(s):
        return [Hit(FactType.SEMANTIC, "dietary_restriction", "纯素", "用户吃纯素")]
    if _VEG_ZH.search(s):
        return [Hit(FactType.SEMANTIC, "dietary_restriction", "素食", "用户吃素")]
    if _HALAL_ZH.search(s):
        return [Hit(FactType.SEMANTIC, "dietary_restriction", "清真", "用户只吃清真食品")]
    kind = _diet_kind_zh(s)
    if kind:
        return kind
    m = _NOT_EAT_ZH.search(s)
    if not m:
        return []
    verb = "不喝" if "喝" in m.group("verb") else "不吃"
    conf = CONF_PLAIN if s.startswith("我") else CONF_IMPLIED
    return [
        Hit(FactType.SEMANTIC, "dietary_restriction", f"{verb}{item}", f"用户{verb}{item}", conf)
        for item in split_list_zh(m.group("x"))
        if item not in ("饭", "东西", "早饭", "午饭", "晚饭")
    ]


_FORMAT_RES_ZH = tuple((rx(p, re.IGNORECASE), v) for p, v in FORMATS_ZH)


def format_zh(s: str) -> list[Hit]:
    return format_hit(s, _FORMAT_RES_ZH, zh=True) if detect_lang(s) == "zh" else []


_LANG_PREF_ZH = (
    rx(
        r"(?:用|以|说|讲)(?P<l>" + LANG_ZH_ALT + r")(?:来|和我|跟我|给我|同我)?"
        r"(?:回复|回答|交流|沟通|对话|聊天|聊|说话|说|写|输出|回我)"
    ),
    rx(
        r"(?:回复|回答|交流|沟通|输出|对话)(?:请|都|一律|全部)*(?:用|以|使用)(?P<l>"
        + LANG_ZH_ALT
        + r")"
    ),
    rx(
        r"我(?:更)?(?:喜欢|偏好|习惯|倾向于?)(?:用)?(?P<l>"
        + LANG_ZH_ALT
        + r")(?:交流|沟通|回复|对话|的回复|回答)"
    ),
)


def language_zh(s: str) -> list[Hit]:
    for pattern in _LANG_PREF_ZH:
        m = pattern.search(s)
        if m and not negated_before(s, m.start()):
            code, zh_label, _ = LANGUAGES[m.group("l")]
            return [Hit(FactType.PROFILE, "preferred_language", code, f"用户希望用{zh_label}回复")]
    return []


# Languages the user speaks (language_spoken, many values), distinct from the reply
# language they want (preferred_language): "我会说粤语和普通话", "I speak Spanish and French".
_LANG_SEP_ZH = r"(?:和|、|与|跟|及|以及|还有|也会|,|/)"
_SPEAK_ZH = rx(
    r"(?:^|我)(?:也|还|都|只|能|可以|从小|一直)*"
    r"(?:会说|会讲|能说|能讲|会|懂|说|讲|精通|母语是|的母语是)"
    r"(?:一点|一些|点|几句|流利的|流利|一口|地道的)?"
    rf"(?P<x>(?:{LANG_ZH_ALT})(?:{_LANG_SEP_ZH}(?:一点|一些|点)?(?:{LANG_ZH_ALT}))*)"
    r"(?!(?:来|和我|跟我|给我|同我)?(?:回复|回答|交流|沟通|对话|聊天|聊|说话|写|输出|回我))"
)
_SPOKEN_ZH_VALUE = {"英文": "英语", "日文": "日语", "韩文": "韩语", "汉语": "中文"}
_LANG_ZH_RE = rx(LANG_ZH_ALT)


def spoken_zh(s: str) -> list[Hit]:
    m = _SPEAK_ZH.search(s)
    if not m or negated_before(s, m.start("x")) or re.search(r"不会|不懂", s[: m.start("x")]):
        return []
    out = []
    for lang in _LANG_ZH_RE.findall(m.group("x")):
        value = _SPOKEN_ZH_VALUE.get(lang, lang)
        out.append(Hit(FactType.SEMANTIC, "language_spoken", value, f"用户会说{value}"))
    return out


_CUISINE_ZH = rx(
    r"(?:^|我)(?:很|最|特别|比较|超|非常|更|一直|也|都)*(?:喜欢|爱|偏爱|偏好|最爱)(?:吃)?"
    r"(?P<x>[\u4e00-\u9fff]{1,6}?)(?:了|的|啦|呀)?$"
)


def cuisine_zh(s: str) -> list[Hit]:
    m = _CUISINE_ZH.search(TRAILING_PUNCT.sub("", s))
    if not m or negated_before(s, m.start() + 1):
        return []
    x = clean_zh(m.group("x"))
    if not x:
        return []
    known = x in CUISINES_ZH or x.endswith(("菜", "料理", "餐"))
    if not known and "吃" not in m.group(0):
        return []
    return [
        Hit(
            FactType.PROFILE,
            "preferred_cuisine",
            x,
            f"用户喜欢吃{x}",
            CONF_PLAIN if known else CONF_IMPLIED,
        )
    ]


_NAME_BAD_START = tuple("了个一你他她它做什么外车醒过")
_NAME_CALL_ZH = rx(
    r"(?:^|[,，\s]|你|请|以后|就|可以|直接)叫我(?!们)(?P<n>[\u4e00-\u9fffA-Za-z]{1,8}?)(?:就行|就好|就可以|吧|即可|好了|$)"
)
_NAME_IS_ZH = (
    rx(r"(?:^|[,，])我(?:的名字|名字)?叫(?P<n>[\u4e00-\u9fffA-Za-z]{2,6})(?:$|[,，])"),
    rx(r"我的名字是(?P<n>[\u4e00-\u9fffA-Za-z]{2,8})(?:$|[,，])"),
    rx(r"称呼我(?:为)?(?P<n>[\u4e00-\u9fffA-Za-z]{1,8}?)(?:就行|就好|即可|吧|$)"),
)


def name_zh(s: str) -> list[Hit]:
    s = TRAILING_PUNCT.sub("", s)
    m = _NAME_CALL_ZH.search(s)
    if m and not negated_before(s, m.start() + 1) and not m.group("n").startswith(_NAME_BAD_START):
        n = m.group("n")
        return [Hit(FactType.PROFILE, "preferred_name", n, f"用户希望被称为{n}", CONF_DIRECT)]
    for pattern in _NAME_IS_ZH:
        m = pattern.search(s)
        if m and not m.group("n").startswith(_NAME_BAD_START):
            n = m.group("n")
            if "叫" in m.group(0) and "叫" not in segment(m.group(0)):
                continue  # 叫外卖, 叫车: jieba reads a verb phrase, not 叫 + name
            if negated_before(s, m.start() + 1):
                continue
            return [Hit(FactType.PROFILE, "preferred_name", n, f"用户的名字是{n}")]
    return []


_LIVE_ZH = rx(
    r"(?:^|我)(?:现在|目前|一直|已经|也|常|长期)*(?:住在|居住在|生活在|定居在|定居|住|家在|搬到了|搬到|搬去了|搬去)"
    r"(?P<p>[\u4e00-\u9fffA-Za-z ]{2,12}?)(?:了|啦|呢|$|[,，]|的|这边|那边)"
)
_WORK_AT_ZH = rx(
    r"(?:^|我)(?:现在|目前|一直|也)*在(?P<p>[\u4e00-\u9fffA-Za-z ]{2,12}?)"
    r"(?:(?P<v>做|当|担任)(?P<j>[\u4e00-\u9fffA-Za-z]{2,10}?)|工作|上班|生活|任职)(?:了|呢|$|[,，])"
)
_JOB_IS_ZH = rx(
    r"(?:^|我)(?:现在|目前|也)*是(?:一名|一个|一位|个|名)?(?:(?P<e>[\u4e00-\u9fffA-Za-z]{2,10})的)?"
    r"(?P<j>(?:[A-Za-z][A-Za-z+#.]{0,15}\s*)?[\u4e00-\u9fffA-Za-z]{1,12}?)(?:$|[,，]|呢|啦)"
)
_JOB_WORK_ZH = rx(r"我(?:的)?(?:工作|职业|职位)是(?P<j>[\u4e00-\u9fffA-Za-z]{1,12}?)(?:$|[,，])")


_LODGING_ZH = frozenset("酒店 宾馆 旅馆 民宿 医院 宿舍 家里 朋友家 这里 那里 附近".split())


def _is_place_zh(p: str) -> bool:
    return (
        p in PLACES_ZH
        or p.endswith(("市", "省", "区", "县", "州", "镇", "村"))
        or any(p.startswith(x) for x in PLACES_ZH)
    )


# What "在X做/当…" does for a living: a job noun, or a field of work ("我在腾讯做安全审计",
# "我在杭州一家电商公司做前端").
_WORK_FIELDS_ZH = (
    "前端", "后端", "全栈", "研发", "设计", "行政", "财务", "外贸", "技术", "市场", "人事", "翻译",
    "教学", "科研", "审计", "法务", "采购", "物流", "质检", "安全", "数据", "算法", "项目",
    "管理", "文案", "策划", "公关", "风控", "护理", "教研", "后勤", "保洁", "安保", "客服",
    "HR", "IT", "开发", "工程", "生意", "兼职", "实习", "志愿者", "义工", "员", "师", "长",
)  # fmt: skip


def _works_as_zh(j: str | None) -> bool:
    if not j:
        return False
    return j.endswith(JOB_NOUNS_ZH) or j.endswith(_WORK_FIELDS_ZH)


def _employer_hit_zh(e: str) -> Hit:
    return Hit(FactType.PROFILE, "employer", e, f"用户在{e}工作")


def _job_hit_zh(j: str) -> Hit:
    return Hit(FactType.PROFILE, "job_title", j, f"用户是{j}")


def where_zh(s: str) -> list[Hit]:
    s = TRAILING_PUNCT.sub("", s)
    m = _LIVE_ZH.search(s)
    if m:
        p = m.group("p").strip()
        if p in _LODGING_ZH:
            return []  # 住酒店: a stay, not where the user lives
        return [Hit(FactType.PROFILE, "location", p, f"用户住在{p}")]
    m = _WORK_AT_ZH.search(s)
    if m and m.group("v") and not _works_as_zh(m.group("j")):
        # "我在医院做检查", "我在理发店做头发", "我在星巴克做作业": what the user does there as a
        # client or for a moment, not where the user works (it read "用户在医院工作")
        m = None
    if m:
        p = m.group("p").strip()
        hits: list[Hit] = []
        # "在多伦多一家银行做…": the place, then an unnamed workplace
        unnamed = re.match(r"(?P<place>.+?)的?(?:一家|某家|一个|某个)", p)
        if unnamed and _is_place_zh(unnamed.group("place")):
            p = unnamed.group("place")
        if _is_place_zh(p):
            hits.append(Hit(FactType.PROFILE, "location", p, f"用户住在{p}", CONF_IMPLIED))
        else:
            hits.append(_employer_hit_zh(p))
        j = m.group("j")
        if j and j.endswith(JOB_NOUNS_ZH):
            hits.append(_job_hit_zh(j))
        return hits
    m = _JOB_IS_ZH.search(s) or _JOB_WORK_ZH.search(s)
    if m and m.group("j").endswith(JOB_NOUNS_ZH):
        hits = [_job_hit_zh(m.group("j"))]
        e = m.groupdict().get("e")
        if e and not _is_place_zh(e):
            hits.append(_employer_hit_zh(e))
        return hits
    return []
