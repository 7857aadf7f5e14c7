"""The default extractor: Chinese and English rules over user turns, offline (SPEC §5).

Precision over recall (000 §3: automatic extraction is noisy; hypotheticals, rhetorical
questions and the model's own words must never become assertions). Each user turn is
split into sentences; a leading greeting or filler ("你好，", "Hi, ", "好的，") is stripped,
a sentence is then screened (questions, hypotheticals, reported speech, sarcasm, past or
one-off content are dropped), then an explicit-instruction prefix ("记住…", "以后都…",
"remember…", "from now on…") is peeled off, then a table of matchers turns the rest into
(type, predicate, value, statement) hits. A matcher may mark a hit `standing` ("别再…",
"don't … anymore", "stop …-ing"): it is then written as an explicit instruction too.
To extend: add a matcher function to `_MATCHERS` and a few rows to the unit test table.
General patterns (response-style requests, first-person preferences, habits, traits and
attributes kept as free statements) live in `extract_prefs` and run after the typed
matchers here: see `extract_sentence`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from app.memory.model import Candidate, FactType, Origin, SourceKind
from app.memory.text import detect_lang, nfkc, segment, split_sentences
from app.providers import extract_prefs
from app.providers.extractor import (
    MAX_EVIDENCE_CHARS,
    MAX_STATEMENT_CHARS,
    Turn,
    cap_per_turn,
)

CONF_EXPLICIT = 0.95
CONF_DIRECT = 0.8  # "call me X", "I'm allergic to X": unambiguous first person
CONF_PLAIN = 0.75  # a clear first-person statement
CONF_IMPLIED = 0.7  # subject left implicit ("不吃猪肉")
HEDGE_PENALTY = 0.25
MIN_CONFIDENCE = 0.5

# Predicates that hold many values (config/policy.yaml); the others keep one per turn.
_MANY = frozenset(
    {"allergy", "dietary_restriction", "communication_constraint", "tech_stack", "language_spoken"}
)


@dataclass(frozen=True)
class Hit:
    """One assertion found in a sentence, before it becomes a Candidate."""

    type: FactType
    predicate: str | None
    value: Any
    statement: str
    confidence: float = CONF_PLAIN
    # A standing request said without a "记住/from now on" prefix ("别再…", "don't … anymore",
    # "stop …-ing"): written as an explicit instruction, like "以后别发短信".
    standing: bool = False


# ---------------------------------------------------------------------------------------
# Sentence splitting and screening
# ---------------------------------------------------------------------------------------

_TRAILING_PUNCT = re.compile(r"[\s。！？!?.;；,，:：~～…]+$")
_CLAUSE = re.compile(r"[,，]")


# Sarcasm or joking anywhere in a turn makes the whole turn unreliable.
_SARCASM = re.compile(
    r"呵呵|才怪|好个屁|反话|开玩笑|开个玩笑|逗你的?|骗你的|🙄|😒|🙃|"
    r"(?:太|真|可|好)[\"'“”‘’「」『』](?:好|棒|喜欢|爱|开心|完美|优秀|贴心|专业|聪明)[\"'“”‘’「」『』]|"
    r"(?i:(?<!\w)/s\b|\byeah,? right\b|\bas if\b|\bjust kidding\b|\bjk\b|\bnot\s*!+\s*$|"
    r"\boh,? (?:great|wonderful|joy|fantastic)\b|"
    r"[\"'“‘](?:love|great|helpful|nice|perfect|amazing)[\"'”’])"
)
_SARCASM_CAPS = re.compile(r"\b(?:LOVE|ADORE|ENJOY|LIKE)\b")

_HYPOTHETICAL_ZH = frozenset(
    "如果 假如 假设 要是 万一 倘若 假使 若是 如若 假若 设想 想象 的话 如果说 要不是".split()
)
_HYPOTHETICAL_EN = re.compile(
    r"(?i)\b(?:if|what if|suppose|supposing|imagine|imagining|assuming|hypothetically|"
    r"let'?s say|pretend|in case|whether|were i)\b"
)

_QUESTION_ZH = frozenset(
    "什么 怎么 怎么样 怎样 为什么 为啥 哪 哪里 哪儿 哪个 哪些 谁 多少 是不是 是否 有没有 "
    "能不能 可不可以 要不要 会不会 对不对 好不好 行不行 几点 如何 咋 啥 吗 么".split()
)
_QUESTION_END_ZH = re.compile(r"(?:吗|呢|么|嘛\?|\?)\s*$")
_QUESTION_EN = re.compile(
    r"(?i)^(?:do|does|did|can|could|would|will|should|shall|is|are|am|was|were|have|has|"
    r"what|why|how|when|where|who|whom|whose|which|may|might|isn't|aren't|don't you|"
    r"didn't|won't|wouldn't)\b"
)
# A polite request that carries a standing instruction is not a question:
# "can you remember that I like tables?", "你能记住我用表格吗？", "以后能不能都用中文？"
_POLITE_EN = re.compile(
    r"(?i)^(?:can|could|would|will)\s+you\s+(?:please\s+)?"
    r"(?=remember|always|never|from now on|stop|not\b|keep in mind|note)"
)
_POLITE_TAIL_EN = re.compile(r"(?i)[,\s]*(?:please)?[\s?]*$")
_POLITE_ZH = re.compile(
    r"^(?:请问|麻烦)?你?(?:能不能|可不可以|能|可以)(?=记住|记下|以后|今后|从现在起|一直|永远)"
)
_POLITE_ZH_INNER = re.compile(r"^(以后|今后|从现在起)(?:能不能|可不可以|能|可以)")
_POLITE_TAIL_ZH = re.compile(r"(?:好吗|可以吗|行吗|好不好|行不行|可不可以|吗|呢|吧)?\s*\?*$")

_THIRD_PARTY_ZH = re.compile(
    r"我(?:的|们家|家)?(?:朋友|同事|老板|领导|妈妈|妈|爸爸|爸|父母|老婆|老公|媳妇|丈夫|妻子|太太|"
    r"先生|女朋友|男朋友|对象|孩子|儿子|女儿|哥哥|哥|姐姐|姐|弟弟|弟|妹妹|妹|室友|邻居|客户|"
    r"家人|家里人|奶奶|爷爷|外婆|外公|同学|上司|经理|医生|老师|宝宝|闺蜜|兄弟)|"
    r"我们家|全家|家里人|听说|据说|据称|人家说|别人说|有人说|"
    r"(?:朋友|同事|老板|领导|医生|老师|妈|爸|老婆|老公)(?:们)?(?:跟我|对我|和我)?(?:说|讲|告诉我|觉得|认为)"
)
_THIRD_PERSON_ZH = frozenset("他 她 他们 她们 它们 他的 她的".split())
_THIRD_PARTY_EN = re.compile(
    r"(?i)\bmy\s+(?:best\s+|old\s+|little\s+|big\s+|younger\s+|older\s+)?(?:friends?|wife|husband|partner|"
    r"boss|manager|colleagues?|co-?workers?|mom|mum|mother|dad|father|parents|brothers?|"
    r"sisters?|sons?|daughters?|kids?|child|children|girlfriend|boyfriend|roommates?|"
    r"neighbou?rs?|clients?|customers?|family|grandma|grandpa|grandmother|grandfather|"
    r"uncle|aunt|cousins?|doctor|teacher|spouse|fianc[eé]e?|baby)\b|"
    r"\b(?:he|she|they|him|her|them|his|hers|their|theirs)\b|"
    r"\b(?:said|says|told me|tells me|told us|according to|heard that|apparently|claims?)\b"
)

_PAST_ZH = re.compile(r"(?:^|我)(?:以前|曾经|过去|原来|之前|小时候)|不再|已经不")
_PAST_EN = re.compile(
    r"(?i)\b(?:used to|formerly|previously|no longer|not anymore|back when|in the past|"
    r"once was|was once)\b"
)
_TRANSIENT_ZH = re.compile(
    r"今天|今晚|明天|这次|这一次|这回|本次|暂时|临时|这个问题|这篇|这份|这一题"
)
_TRANSIENT_EN = re.compile(
    r"(?i)\b(?:today|tonight|tomorrow|this time|for now|right now|just this once|this once|"
    r"for this (?:one|question|task|answer|report|email|doc|document|reply))\b"
)
_HEDGE_ZH = re.compile(r"好像|可能|也许|大概|似乎|说不定|估计|应该是|我猜|我觉得|感觉|或许|貌似")
_HEDGE_EN = re.compile(
    r"(?i)\b(?:maybe|perhaps|probably|i think|i guess|i believe|possibly|might|kind of|"
    r"sort of|i suppose)\b"
)
_DOUBT = re.compile(
    r"(?i)不确定|不知道是不是|说不准|\bnot sure\b|\bno idea\b|\bi doubt\b|\bunsure\b"
)


# Greetings and filler before the real sentence ("你好，", "Hi, ", "好的，", "ok, "): stripped
# before screening, so "你好，记住我用表格输出" is the explicit instruction it would be
# without the greeting. Each needs its punctuation, so "好吃" or "Hiking" are left alone.
_FILLER = re.compile(
    r"(?i)^(?:(?:你好|您好|嗨|哈喽|哈啰|嘿|喂|谢谢你?|多谢|感谢|好的|好吧|好嘞|好|嗯嗯|嗯|哦|噢|"
    r"行|可以|对了|对的|对对|对|是的|没错|另外|还有|那么|那|"
    r"(?:hi|hello|hey|hiya|yo|howdy)(?:\s+there)?|good (?:morning|afternoon|evening)|"
    r"thanks(?: a lot)?|thank you|thx|ok(?:ay)?|alright|all right|sure|cool|great|got it|"
    r"btw|by the way|also|and|so|oh|well|yes|yeah|yep|right|exactly|correct|indeed)"
    r"(?:呀|啊|啦|哈|呢|~)*\s*[,，、!！.。~～:：;；—\-]+\s*)+"
)


def is_sarcastic(text: str) -> bool:
    folded = nfkc(text)
    if _SARCASM.search(folded):
        return True
    # "Oh sure, I just LOVE being called at 6am": emphatic caps after an ironic opener.
    return bool(
        _SARCASM_CAPS.search(folded) and re.search(r"(?i)\b(?:oh|sure|yeah|totally)\b", folded)
    )


# "When I say 'the usual' I mean…", "When I travel, I always…": the user's own condition
# and main clause, a statement (a question would end with "?").
_WHEN_STATEMENT_EN = re.compile(r"(?i)^when(?:ever)?\s+i\s+.+?(?:,\s*|\s)i\s+\w+")


def _is_question(s: str, tokens: Sequence[str]) -> bool:
    if s.rstrip().endswith("?"):
        return True
    if _QUESTION_END_ZH.search(s) or _QUESTION_ZH.intersection(tokens):
        return True
    return bool(_QUESTION_EN.search(s)) and not _WHEN_STATEMENT_EN.match(s)


def _unwrap_polite(s: str) -> str | None:
    """The instruction inside a polite request, or None when it is not one."""
    m = _POLITE_EN.match(s)
    if m:
        return _POLITE_TAIL_EN.sub("", s[m.end() :])
    m = _POLITE_ZH.match(s)
    if m:
        return _POLITE_TAIL_ZH.sub("", s[m.end() :])
    m = _POLITE_ZH_INNER.match(s)
    if m:
        return m.group(1) + _POLITE_TAIL_ZH.sub("", s[m.end() :])
    return None


def _screen(s: str) -> str | None:
    """The sentence if it may carry a reusable first-person assertion, else None (dropped)."""
    tokens = segment(s)
    if _is_question(s, tokens):
        unwrapped = _unwrap_polite(s)
        if unwrapped is None:
            return None
        s = unwrapped
        tokens = segment(s)
        if _is_question(s, tokens):
            return None
    s = _TRAILING_PUNCT.sub("", s)
    if _HYPOTHETICAL_ZH.intersection(tokens) or _HYPOTHETICAL_EN.search(s):
        return None
    if _THIRD_PARTY_ZH.search(s) or _THIRD_PERSON_ZH.intersection(tokens):
        return None
    if _THIRD_PARTY_EN.search(s):
        return None
    if _PAST_ZH.search(s) or _PAST_EN.search(s):
        return None
    if _TRANSIENT_ZH.search(s) or _TRANSIENT_EN.search(s):
        return None
    if _DOUBT.search(s):
        return None
    return s


# ---------------------------------------------------------------------------------------
# Explicit instructions
# ---------------------------------------------------------------------------------------

_LEAD_ZH = r"^(?:好的|好|那|那么|对了|另外|还有|顺便说一下|顺便|嗯)?[,\s]*"
_REMEMBER_ZH = re.compile(
    _LEAD_ZH + r"(?:请|麻烦|你)*(?:帮我|给我)?"
    r"(?:记住|记一下|记下来|记下|记好|牢记|别忘了|不要忘了|记得(?=我))(?:了|哦|啊|一下)?[:：,\s]*"
)
_REMEMBER_TAIL_ZH = re.compile(
    r"[,\s]*(?:请|你)?(?:要)?(?:记住|记好|记下|记一下)(?:了|哦|啊|啦|一下)?\s*$"
)
_STANDING_ZH = re.compile(
    _LEAD_ZH
    + r"(?:请|你)?我?(?:以后|今后|从现在起|从现在开始|从今以后|往后|以后的话|一律|永远|每次都|总是)"
    r"(?:请|你|都|也|一律|一直|每次|全部|统统|要)*[,\s]*"
)
_REMEMBER_EN = re.compile(
    r"(?i)^(?:ok(?:ay)?|so|also|and|btw|by the way|oh)?[,\s]*(?:please\s+)?"
    r"(?:remember|keep in mind|don't forget|do not forget|never forget|make a note|take note|"
    r"note|for (?:future )?reference|save (?:this|that)|memorize)"
    r"(?:\s+(?:this|that|of this|of that))?(?:\s*[:,\-]\s*|\s+that\s+|\s+|$)"
)
_REMEMBER_TAIL_EN = re.compile(r"(?i)[,\s\-]*(?:please\s+)?remember\s+(?:that|this)[.!\s]*$")
_STANDING_EN = re.compile(
    r"(?i)^(?:ok(?:ay)?|so|also|and)?[,\s]*(?:please\s+)?"
    r"(?:from now on|going forward|moving forward|in (?:the )?future|henceforth|always)"
    r"[,\s]*(?:please\s+)?(?:always\s+)?"
)
_GROUP_MARKER = re.compile(
    r"(?i)^(?:以下|以下几点|下面|下面几点|这些|这几点|the following|this|these)?\s*$"
)


@dataclass(frozen=True)
class _Instruction:
    explicit: bool
    body: str
    remember: bool  # "记住/remember": free statements may be kept when no rule matches


def peel_instruction(s: str) -> _Instruction:
    for pattern, remember in (
        (_REMEMBER_ZH, True),
        (_REMEMBER_EN, True),
        (_STANDING_ZH, False),
        (_STANDING_EN, False),
    ):
        m = pattern.match(s)
        if m and m.end() > 0 and m.group(0).strip(" ,"):
            return _Instruction(True, s[m.end() :].strip(), remember)
    for pattern in (_REMEMBER_TAIL_ZH, _REMEMBER_TAIL_EN):
        m = pattern.search(s)
        if m and m.start() > 0:
            return _Instruction(True, s[: m.start()].strip(" ,，"), True)
    return _Instruction(False, s, False)


# ---------------------------------------------------------------------------------------
# Vocabularies
# ---------------------------------------------------------------------------------------

_FORMATS_ZH: tuple[tuple[str, str], ...] = (
    (r"markdown\s*表格|md\s*表格", "markdown_table"),
    (r"表格", "table"),
    (r"编号列表|有序列表", "numbered_list"),
    (r"要点|列表|分点|项目符号|bullet", "bullet_list"),
    (r"纯文本", "plain_text"),
    (r"json", "json"),
    (r"markdown", "markdown"),
)
_FORMATS_EN: tuple[tuple[str, str], ...] = (
    (r"markdown tables?", "markdown_table"),
    (r"tables?|tabular(?: format)?", "table"),
    (r"numbered lists?", "numbered_list"),
    (r"bullet(?:ed)? (?:points?|lists?)|bullets|bulleted", "bullet_list"),
    (r"plain text", "plain_text"),
    (r"json", "json"),
    (r"markdown", "markdown"),
)
_FORMAT_LABEL = {
    "markdown_table": ("Markdown 表格", "Markdown tables"),
    "table": ("表格", "tables"),
    "numbered_list": ("编号列表", "numbered lists"),
    "bullet_list": ("要点列表", "bullet points"),
    "plain_text": ("纯文本", "plain text"),
    "json": ("JSON", "JSON"),
    "markdown": ("Markdown", "Markdown"),
}

_LANGUAGES: dict[str, tuple[str, str, str]] = {
    # surface → (code, zh label, en label)
    "简体中文": ("zh", "中文", "Chinese"),
    "繁体中文": ("zh-Hant", "繁体中文", "Traditional Chinese"),
    "中文": ("zh", "中文", "Chinese"),
    "汉语": ("zh", "中文", "Chinese"),
    "普通话": ("zh", "中文", "Chinese"),
    "粤语": ("yue", "粤语", "Cantonese"),
    "英文": ("en", "英文", "English"),
    "英语": ("en", "英文", "English"),
    "日语": ("ja", "日语", "Japanese"),
    "日文": ("ja", "日语", "Japanese"),
    "韩语": ("ko", "韩语", "Korean"),
    "韩文": ("ko", "韩语", "Korean"),
    "法语": ("fr", "法语", "French"),
    "德语": ("de", "德语", "German"),
    "西班牙语": ("es", "西班牙语", "Spanish"),
    "english": ("en", "英文", "English"),
    "chinese": ("zh", "中文", "Chinese"),
    "mandarin": ("zh", "中文", "Chinese"),
    "cantonese": ("yue", "粤语", "Cantonese"),
    "japanese": ("ja", "日语", "Japanese"),
    "korean": ("ko", "韩语", "Korean"),
    "french": ("fr", "法语", "French"),
    "german": ("de", "德语", "German"),
    "spanish": ("es", "西班牙语", "Spanish"),
    "italian": ("it", "意大利语", "Italian"),
    "portuguese": ("pt", "葡萄牙语", "Portuguese"),
    "russian": ("ru", "俄语", "Russian"),
    "意大利语": ("it", "意大利语", "Italian"),
    "葡萄牙语": ("pt", "葡萄牙语", "Portuguese"),
    "俄语": ("ru", "俄语", "Russian"),
    "荷兰语": ("nl", "荷兰语", "Dutch"),
    "瑞典语": ("sv", "瑞典语", "Swedish"),
    "挪威语": ("no", "挪威语", "Norwegian"),
    "丹麦语": ("da", "丹麦语", "Danish"),
    "芬兰语": ("fi", "芬兰语", "Finnish"),
    "波兰语": ("pl", "波兰语", "Polish"),
    "捷克语": ("cs", "捷克语", "Czech"),
    "乌克兰语": ("uk", "乌克兰语", "Ukrainian"),
    "希腊语": ("el", "希腊语", "Greek"),
    "土耳其语": ("tr", "土耳其语", "Turkish"),
    "阿拉伯语": ("ar", "阿拉伯语", "Arabic"),
    "希伯来语": ("he", "希伯来语", "Hebrew"),
    "波斯语": ("fa", "波斯语", "Persian"),
    "印地语": ("hi", "印地语", "Hindi"),
    "泰语": ("th", "泰语", "Thai"),
    "越南语": ("vi", "越南语", "Vietnamese"),
    "印尼语": ("id", "印尼语", "Indonesian"),
    "马来语": ("ms", "马来语", "Malay"),
    "闽南语": ("nan", "闽南语", "Hokkien"),
    "上海话": ("wuu", "上海话", "Shanghainese"),
    "dutch": ("nl", "荷兰语", "Dutch"),
    "swedish": ("sv", "瑞典语", "Swedish"),
    "norwegian": ("no", "挪威语", "Norwegian"),
    "danish": ("da", "丹麦语", "Danish"),
    "finnish": ("fi", "芬兰语", "Finnish"),
    "polish": ("pl", "波兰语", "Polish"),
    "czech": ("cs", "捷克语", "Czech"),
    "ukrainian": ("uk", "乌克兰语", "Ukrainian"),
    "greek": ("el", "希腊语", "Greek"),
    "turkish": ("tr", "土耳其语", "Turkish"),
    "arabic": ("ar", "阿拉伯语", "Arabic"),
    "hebrew": ("he", "希伯来语", "Hebrew"),
    "persian": ("fa", "波斯语", "Persian"),
    "farsi": ("fa", "波斯语", "Persian"),
    "hindi": ("hi", "印地语", "Hindi"),
    "urdu": ("ur", "乌尔都语", "Urdu"),
    "bengali": ("bn", "孟加拉语", "Bengali"),
    "tamil": ("ta", "泰米尔语", "Tamil"),
    "thai": ("th", "泰语", "Thai"),
    "vietnamese": ("vi", "越南语", "Vietnamese"),
    "indonesian": ("id", "印尼语", "Indonesian"),
    "malay": ("ms", "马来语", "Malay"),
    "tagalog": ("tl", "菲律宾语", "Tagalog"),
    "swahili": ("sw", "斯瓦希里语", "Swahili"),
}
_LANG_ZH_ALT = "|".join(sorted((k for k in _LANGUAGES if not k.isascii()), key=len, reverse=True))
_LANG_EN_ALT = "|".join(k for k in _LANGUAGES if k.isascii())
# Also a cuisine ("I like Thai"): a bare "I like X" names the food, not the reply language.
_LANG_EN_FOOD = frozenset("thai vietnamese greek turkish indonesian malay".split())
_LANG_EN_PREF_ALT = "|".join(k for k in _LANGUAGES if k.isascii() and k not in _LANG_EN_FOOD)

_CARRIERS: tuple[tuple[str, str], ...] = (
    # pattern → canonical value (merges 顺丰 and SF Express)
    (r"顺丰(?:快递|速运)?|(?i:sf\s*express)", "SF Express"),
    (r"京东(?:快递|物流)?|(?i:jd\s*logistics)", "JD Logistics"),
    (r"中通(?:快递)?", "ZTO Express"),
    (r"圆通(?:快递)?", "YTO Express"),
    (r"申通(?:快递)?", "STO Express"),
    (r"韵达(?:快递)?", "Yunda Express"),
    (r"德邦(?:快递|物流)?", "Deppon"),
    (r"极兔(?:快递)?", "J&T Express"),
    (r"中国邮政|邮政|(?i:\bems\b)", "China Post EMS"),
    (r"联邦快递|(?i:\bfedex\b)", "FedEx"),
    (r"(?i:\bups\b)", "UPS"),
    (r"(?i:\bdhl\b)", "DHL"),
    (r"(?i:\busps\b)", "USPS"),
    (r"(?i:\broyal mail\b)", "Royal Mail"),
)
_CARRIER_RES = tuple((re.compile(p), v) for p, v in _CARRIERS)
_ANY_CARRIER = re.compile("|".join(f"(?:{p})" for p, _ in _CARRIERS))
# Substrings one of which every carrier mention contains: a cheap test before the regexes.
_CARRIER_KEYS = tuple(
    "顺丰 京东 中通 圆通 申通 韵达 德邦 极兔 邮政 联邦快递 "
    "sf jd ems fedex ups dhl usps royal".split()
)


def _may_name_carrier(text: str) -> bool:
    low = text.lower()
    return any(k in low for k in _CARRIER_KEYS)


_DELIVERY_CUE_ZH = re.compile(r"快递|发货|寄|配送|物流|送货|邮寄|发件|走|发")
_DELIVERY_CUE_EN = re.compile(
    r"(?i)\b(?:ship|shipping|shipped|send|deliver|delivery|deliveries|mail|parcels?|packages?|"
    r"shipments?|courier|carrier|prefer|use|using|by default)\b"
)

_CUISINES_ZH = (
    "川菜 粤菜 湘菜 鲁菜 苏菜 浙菜 闽菜 徽菜 东北菜 西北菜 新疆菜 云南菜 客家菜 潮汕菜 本帮菜 "
    "日本料理 日料 日本菜 韩国料理 韩料 韩国菜 泰国菜 泰餐 越南菜 印度菜 意大利菜 意餐 法餐 法国菜 "
    "西餐 中餐 火锅 烧烤 海鲜 素菜 墨西哥菜 西班牙菜 清淡 辣 甜食"
).split()
_DISHES_EN = (
    r"sushi|ramen|pizza|tacos|curry|dim sum|hot ?pot|bbq|barbecue|pasta|seafood|spicy food|"
    r"thai|indian|mexican|korean|sichuan|cantonese|italian|japanese|chinese|french|vietnamese"
)

_JOB_NOUNS_ZH = tuple(
    (
        "工程师 程序员 开发者 开发 设计师 经理 老师 教师 医生 护士 律师 会计师 会计 分析师 架构师 "
        "研究员 科学家 学生 研究生 博士生 本科生 销售 运营 顾问 总监 主管 创始人 合伙人 作家 记者 "
        "编辑 实习生 教授 讲师 司机 厨师 专员 助理 总裁 CEO CTO CFO COO 测试 运维 DBA 产品 负责人"
    ).split()
)
_JOB_NOUNS_EN = (
    r"engineer|developer|programmer|manager|designer|teacher|doctor|nurse|lawyer|accountant|"
    r"analyst|architect|researcher|scientist|student|consultant|founder|co-founder|director|"
    r"writer|journalist|editor|professor|lecturer|intern|administrator|marketer|salesperson|"
    r"recruiter|lead|owner|ceo|cto|cfo|coo|pm|sre|specialist|officer|executive|chef|driver|"
    r"pharmacist|dentist|therapist|artist|photographer|translator|tester|devops"
)
_PLACES_ZH = (
    "北京 上海 广州 深圳 杭州 成都 南京 武汉 西安 重庆 天津 苏州 长沙 郑州 青岛 厦门 大连 宁波 "
    "合肥 昆明 沈阳 哈尔滨 济南 福州 香港 澳门 台北 新加坡 东京 大阪 首尔 纽约 伦敦 巴黎 柏林 "
    "旧金山 硅谷 洛杉矶 西雅图 悉尼 多伦多 温哥华 美国 英国 日本 德国 法国 加拿大 澳洲 澳大利亚 "
    "国外 海外 老家 浦东 朝阳 海淀"
).split()
_COMPANY_SUFFIX_ZH = (
    "公司",
    "集团",
    "科技",
    "银行",
    "大学",
    "学院",
    "医院",
    "研究院",
    "研究所",
    "实验室",
    "工作室",
)

_TECH_STOP = frozenset(
    "the a an it this that my our i we markdown json table tables english chinese "
    "mandarin japanese korean french german spanish ups dhl fedex usps ems sf".split()
)


# ---------------------------------------------------------------------------------------
# Small text helpers
# ---------------------------------------------------------------------------------------


def _clean_zh(value: str) -> str:
    return re.sub(
        r"^[的是]|(?:了|啦|呀|哦|啊|的|呢|吧|这些|东西|等等?)+$", "", value.strip(" ,，、")
    ).strip()


def _split_list_zh(value: str) -> list[str]:
    parts = re.split(r"和|、|与|跟|及|以及|还有|,|，|/", value)
    return [p for p in (_clean_zh(x) for x in parts) if p]


def _split_list_en(value: str) -> list[str]:
    parts = re.split(r"(?i)\s*(?:,|&|/|\band\b|\bor\b|\bplus\b)\s*", value)
    out = []
    for part in parts:
        part = re.sub(r"(?i)^(?:a|an|the|all|any|some)\s+", "", part.strip())
        part = re.sub(r"(?i)\s+(?:too|as well|also|either)$", "", part).strip(" .")
        if part:
            out.append(part)
    return out


def _singular(word: str) -> str:
    w = word.lower().strip()
    if " " in w:
        head, _, last = w.rpartition(" ")
        return f"{head} {_singular(last)}"
    if w.endswith("ies") and len(w) > 4:
        return w[:-3] + "y"
    if w.endswith("oes"):
        return w[:-2]
    if w.endswith("s") and not w.endswith(("ss", "us", "is", "fish", "sis")) and len(w) > 3:
        return w[:-1]
    return w


def _swap_pronouns_en(text: str) -> str:
    table = {"me": "them", "my": "their", "mine": "theirs", "myself": "themselves", "i": "they"}

    def sub(m: re.Match[str]) -> str:
        return table[m.group(0).lower()]

    return re.sub(r"(?i)\b(?:me|my|mine|myself|i)\b", sub, text)


def _third_person_en(text: str) -> str:
    return extract_prefs.third_person_en(text)


def _negated_before(s: str, start: int) -> bool:
    window = s[max(0, start - 12) : start]
    return bool(
        re.search(r"不要|别|不许|禁止|不准|不喜欢|讨厌|不想|勿|不用|不是", window)
        or re.search(
            r"(?i)\b(?:don't|do not|dont|never|no|not|without|hate|dislike|avoid|stop)\b", window
        )
    )


# ---------------------------------------------------------------------------------------
# Matchers: sentence (instruction already peeled) → hits
# ---------------------------------------------------------------------------------------

Matcher = Callable[[str], list[Hit]]

_NEG_ZH = (
    r"(?:千万别|永远别|绝对不要|永远不要|千万不要|不要再|别再|不准再|"
    r"不要|别|不许|禁止|不准|请勿|勿)"
)
_CONSTRAINT_VERBS_ZH = (
    r"(?:发|打|联系|称呼|叫|用|使用|回复|推送|提醒|加|带|推荐|写|说|提|问|催|安排|约|在|给|打扰|群发|"
    r"@|抄送|超过|晚于|早于|周末|半夜|晚上|早上)"
)
_CONSTRAINT_ZH = re.compile(
    r"^(?P<pre>[^我他她]{0,12}?)(?:请|你|也|都|再|一律|千万)*"
    + _NEG_ZH
    + r"(?:在)?(?:给我|跟我|对我|和我|帮我)?"
    r"(?P<rest>" + _CONSTRAINT_VERBS_ZH + r".{0,40})$"
)


# "别再/不要再/永远别…": a standing request even without "以后" (written as explicit).
_STANDING_NEG_ZH = re.compile(r"再|永远|千万别|绝对不要|千万不要")
# "现在先别发", "等一下别发", "还不要发": about the message at hand, not a standing rule.
_ONE_OFF_ZH = re.compile(r"先|现在|马上|立刻|等一?下|等会|稍后|还|这条|这封|这个|那个")
_ONE_OFF_OBJ_ZH = re.compile(r"^.{1,2}?(?:这|那)(?:个|封|条|份|篇|张)|^.{1,2}?它")


def _constraint_zh(s: str) -> list[Hit]:
    hits = []
    for clause in _CLAUSE.split(s):
        clause = _TRAILING_PUNCT.sub("", clause.strip())
        m = _CONSTRAINT_ZH.match(clause)
        if not m:
            continue
        rest = re.sub(r"(?:了|啊|哦|啦|呀)+$", "", m.group("rest"))
        if rest.startswith(("吃", "喝")) or (_may_name_carrier(rest) and _ANY_CARRIER.search(rest)):
            continue
        pre = re.sub(r"^(?:以后|今后|从现在起|从今以后|往后|请|你)+", "", m.group("pre")).strip()
        if _ONE_OFF_ZH.search(pre) or _ONE_OFF_OBJ_ZH.match(rest):
            continue
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


_CONSTRAINT_VERBS_EN = (
    r"(?:ever\s+)?(?:use|using|send|sending|call|calling|text|texting|email|emailing|message|"
    r"messaging|contact|contacting|ping|pinging|address|reply|respond|mention|include|add|"
    r"recommend|schedule|book|write|put|cc|bother|wake|spam|ask|suggest|share|post|show|talk|"
    r"speak|phone|remind|notify)\b"
)
_CONSTRAINT_EN = re.compile(
    r"(?i)^(?:please\s+)?(?P<neg>don't|do not|dont|never|stop|no more|avoid)\s+(?P<rest>"
    + _CONSTRAINT_VERBS_EN
    + r".{0,80})$"
)
_NO_THING_EN = re.compile(
    r"(?i)^(?:please\s+)?no\s+(?P<rest>(?:more\s+)?(?:emojis?|emoticons|sms|texts?|text messages|"
    r"calls?|phone calls|emails?|jargon|slang|small talk|exclamation marks|newsletters)\b.{0,40})$"
)


# "don't … anymore", "never … again", "stop …-ing", "don't ever …", "no more …": a standing
# request, written as an explicit instruction like "以后别发短信".
_STANDING_TAIL_EN = re.compile(r"(?i)\s+(?:anymore|any more|(?:ever\s+)?again|ever)$")
# "don't send it now", "don't call yet": about the thing at hand, not a standing rule.
_ONE_OFF_EN = re.compile(
    r"(?i)\b(?:now|yet|until|till|at the moment|right away|so soon|just then)\b|"
    r"^(?:ever\s+)?\w+\s+(?:it|this|that|these|those)\b"
)


def _constraint_en(s: str) -> list[Hit]:
    hits = []
    for clause in _CLAUSE.split(s):
        clause = _TRAILING_PUNCT.sub("", clause.strip())
        clause = re.sub(r"(?i)\s+please$", "", clause)
        tail = _STANDING_TAIL_EN.search(clause)
        if tail:
            clause = clause[: tail.start()]
        clause = re.sub(r"(?i)\s+please$", "", clause)
        m = _CONSTRAINT_EN.match(clause)
        if m:
            neg = m.group("neg").lower()
            rest = m.group("rest")
            if _ONE_OFF_EN.search(rest):
                continue
            standing = bool(tail or neg in ("stop", "no more") or re.match(r"(?i)ever\b", rest))
            if neg in ("do not", "dont"):
                neg = "don't"
            value = f"{neg} {rest}"
            them = _swap_pronouns_en(rest)
            if neg == "don't":
                statement = f"The user asks you not to {them}"
            elif neg == "never":
                statement = f"The user asks you never to {them}"
            elif neg == "avoid":
                statement = f"The user asks you to avoid {them}"
            else:
                statement = f"The user asks you to stop {them}"
            hits.append(
                Hit(
                    FactType.SEMANTIC,
                    "communication_constraint",
                    value,
                    statement,
                    CONF_DIRECT,
                    standing,
                )
            )
            continue
        m = _NO_THING_EN.match(clause)
        if m:
            rest = m.group("rest").lower()
            hits.append(
                Hit(
                    FactType.SEMANTIC,
                    "communication_constraint",
                    f"no {rest}",
                    f"The user asks for no {_swap_pronouns_en(rest)}",
                    CONF_DIRECT,
                    bool(tail or rest.startswith("more ")),
                )
            )
    return hits


_ALLERGY_ZH = (
    re.compile(
        r"(?:^|我|本人)(?:也|一直|从小|都|有点|比较|严重|非常|特别|好像|可能|也许|大概|似乎|应该|貌似)*对(?P<x>[^,，。]{1,20}?)"
        r"(?:都|也|有点|比较|严重|非常|特别|会)*(?<![不没])过敏"
    ),
    re.compile(r"(?:^|我)(?:有|患有)(?P<x>[^,，。对]{1,10}?)过敏"),
    re.compile(r"^我(?P<x>[\u4e00-\u9fff]{1,6}?)过敏$"),
    re.compile(
        r"(?:^|我)(?:不能吃|不能碰|碰不得|吃不了)(?P<x>[^,，。]{1,10}?)[,，]?(?:会|因为|要|一吃就|吃了就)过敏"
    ),
)


def _allergy_zh(s: str) -> list[Hit]:
    for pattern in _ALLERGY_ZH:
        m = pattern.search(s)
        if m:
            items = _split_list_zh(m.group("x"))
            return [
                Hit(FactType.SEMANTIC, "allergy", item, f"用户对{item}过敏", CONF_DIRECT)
                for item in items
                if not re.search(r"不|没", item)
            ]
    return []


_ALLERGY_EN = (
    re.compile(
        r"(?i)\bi(?:'m| am)\s+(?:(?:very|severely|highly|also|really|deathly|mildly|seriously)\s+)*"
        r"allergic\s+to\s+(?P<x>.+?)(?:\s+(?:so|but|which|because)\b.*)?$"
    ),
    re.compile(r"(?i)\bi\s+have\s+(?:an?\s+)?allerg(?:y|ies)\s+to\s+(?P<x>.+?)$"),
    re.compile(
        r"(?i)\bi\s+have\s+(?:an?\s+)?(?:(?:severe|serious|mild)\s+)?"
        r"(?P<x>[a-z][a-z\- ]{1,30}?)\s+allerg(?:y|ies)\b"
    ),
)


def _allergy_en(s: str) -> list[Hit]:
    for pattern in _ALLERGY_EN:
        m = pattern.search(s)
        if m:
            return [
                Hit(
                    FactType.SEMANTIC,
                    "allergy",
                    _singular(item),
                    f"The user is allergic to {item.lower()}",
                    CONF_DIRECT,
                )
                for item in _split_list_en(m.group("x"))
            ]
    return []


_VEG_ZH = re.compile(
    r"(?:^|我)(?:是|一直|平时|现在|从来|都|只|也|长期)*(?:吃素|吃斋|素食者|素食主义者|吃素的)"
)
_VEGAN_ZH = re.compile(r"(?:^|我)(?:是|一直|平时|现在|只|也)*(?:吃全素|纯素|严格素食)")
_HALAL_ZH = re.compile(r"(?:^|我)(?:只)?吃清真")
_NOT_EAT_ZH = re.compile(
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
_DIET_KIND_ZH = re.compile(
    r"(?:我(?:(?:现在|目前|一直|最近|这段时间|这阵子|长期|平时|也|都|还|已经|坚持)*)"
    r"(?:在|正在|坚持|吃|做|搞|采用|执行|实行|走|开始|保持|遵循)*|"
    r"^(?:(?:现在|目前|一直|最近|这段时间|这阵子|长期|平时|也|都|还|已经|坚持)*)"
    r"(?:在|正在|坚持|吃|做|搞|采用|执行|实行|走|开始|保持|遵循)+)"
    r"(?P<d>" + "|".join(p for p, _ in _DIET_KINDS_ZH) + r")"
)
# A diet taken up "lately" may be a phase: kept, with less confidence.
_RECENT = re.compile(r"最近|这段时间|这阵子|(?i:\b(?:lately|recently|these days)\b)")
CONF_RECENT = 0.6


def _diet_kind_zh(s: str) -> list[Hit]:
    m = _DIET_KIND_ZH.search(s)
    if not m or _negated_before(s, m.start("d")):
        return []
    d = m.group("d")
    value = next(v for p, v in _DIET_KINDS_ZH if re.fullmatch(p, d))
    conf = CONF_RECENT if _RECENT.search(s) else CONF_PLAIN
    return [Hit(FactType.SEMANTIC, "dietary_restriction", value, f"用户采用{value}", conf)]


def _diet_zh(s: str) -> list[Hit]:
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
        for item in _split_list_zh(m.group("x"))
        if item not in ("饭", "东西", "早饭", "午饭", "晚饭")
    ]


_DIETS_EN = {
    "vegetarian": ("vegetarian", "The user is vegetarian"),
    "vegan": ("vegan", "The user is vegan"),
    "pescatarian": ("pescatarian", "The user is pescatarian"),
    "pescetarian": ("pescatarian", "The user is pescatarian"),
    "gluten-free": ("gluten-free", "The user eats gluten-free"),
    "gluten free": ("gluten-free", "The user eats gluten-free"),
    "lactose intolerant": ("lactose-free", "The user is lactose intolerant"),
    "lactose-intolerant": ("lactose-free", "The user is lactose intolerant"),
    "dairy-free": ("dairy-free", "The user eats dairy-free"),
    "dairy free": ("dairy-free", "The user eats dairy-free"),
    "kosher": ("kosher", "The user keeps kosher"),
    "halal": ("halal", "The user eats halal"),
    "plant-based": ("vegan", "The user is vegan"),
    "teetotal": ("no alcohol", "The user does not drink alcohol"),
    "keto": ("keto", "The user follows a keto diet"),
    "ketogenic": ("keto", "The user follows a keto diet"),
    "low-carb": ("low-carb", "The user follows a low-carb diet"),
    "low carb": ("low-carb", "The user follows a low-carb diet"),
    "paleo": ("paleo", "The user follows a paleo diet"),
    "teetotaler": ("no alcohol", "The user does not drink alcohol"),
}
_DIET_WORDS_EN = "|".join(sorted(_DIETS_EN, key=len, reverse=True))
_DIET_IS_EN = re.compile(
    r"(?i)\bi(?:'m| am)\s+(?:(?:a|an|strictly|fully|now|also|completely|mostly)\s+)*(?P<d>"
    + _DIET_WORDS_EN
    + r")\b"
)
_DIET_EAT_EN = re.compile(
    r"(?i)\bi\s+(?:only\s+)?(?:eat|keep|follow a)\s+(?P<d>" + _DIET_WORDS_EN + r")\b"
)
_DIET_ON_EN = re.compile(
    r"(?i)\bi(?:'m| am|(?:'ve| have)(?:\s+(?:recently|lately|always|also))?\s+been)\s+"
    r"(?:(?:now|currently|still|strictly|also|mostly|recently|lately)\s+)*"
    r"(?:on|following|doing|eating)\s+(?:an?\s+|the\s+)?(?:strict\s+)?"
    r"(?:(?P<k>" + _DIET_WORDS_EN + r")(?:\s+diet)?|(?P<d>[a-z\-]+)\s+diet)\b"
)
# Not a diet kind ("I'm on a strict diet"), or a past one ("…been on a keto diet before").
_DIET_ON_STOP = frozenset("new special strict crash healthy balanced good bad proper no".split())
_DIET_ON_PAST = re.compile(r"(?i)\b(?:before|until|till|once|twice|times|last (?:year|month))\b")
_NOT_EAT_EN = re.compile(
    r"(?i)\bi\s+(?:don't|do not|dont|never|can't|cannot|can not)\s+(?P<verb>eat|drink|have)"
    r"(?:\s+(?P<x>[a-z][a-z\- ,]{1,40}?))?(?:\s+(?:anymore|at all|ever|because\b.*|since\b.*))?$"
)


def _diet_en(s: str) -> list[Hit]:
    if re.search(r"(?i)\ballerg", s):
        return []
    for pattern in (_DIET_IS_EN, _DIET_EAT_EN):
        m = pattern.search(s)
        if m:
            value, statement = _DIETS_EN[m.group("d").lower()]
            return [Hit(FactType.SEMANTIC, "dietary_restriction", value, statement)]
    m = _DIET_ON_EN.search(s)
    if m and not _DIET_ON_PAST.search(s, m.end()):
        conf = CONF_RECENT if _RECENT.search(s) else CONF_PLAIN
        if m.group("k"):
            value, statement = _DIETS_EN[m.group("k").lower()]
            return [Hit(FactType.SEMANTIC, "dietary_restriction", value, statement, conf)]
        diet = m.group("d").lower()
        if diet not in _DIET_ON_STOP:
            return [
                Hit(
                    FactType.SEMANTIC,
                    "dietary_restriction",
                    diet,
                    f"The user is on a {diet} diet",
                    conf,
                )
            ]
    m = _NOT_EAT_EN.search(s)
    if not m:
        return []
    verb = m.group("verb").lower()
    if not m.group("x"):
        if verb != "drink":
            return []
        return [
            Hit(
                FactType.SEMANTIC,
                "dietary_restriction",
                "no alcohol",
                "The user does not drink alcohol",
            )
        ]
    hits = []
    for item in _split_list_en(m.group("x")):
        item = item.lower()
        what = "drink" if verb == "drink" else "eat"
        hits.append(
            Hit(
                FactType.SEMANTIC,
                "dietary_restriction",
                f"no {item}",
                f"The user does not {what} {item}",
            )
        )
    return hits


_FORMAT_CUE_ZH = re.compile(
    r"用|以|喜欢|偏好|习惯|倾向|输出|回复|回答|格式|展示|呈现|整理|做成|给我|列|要"
)
_FORMAT_CUE_EN = re.compile(
    r"(?i)\b(?:prefer|like|love|want|use|format|reply|respond|answer|output|give me|show|"
    r"present|put|write|in|as)\b"
)
_FORMAT_RES_ZH = tuple((re.compile(p, re.IGNORECASE), v) for p, v in _FORMATS_ZH)
_FORMAT_RES_EN = tuple((re.compile(rf"(?i)\b(?:{p})\b"), v) for p, v in _FORMATS_EN)


def _format_hit(s: str, table: tuple[tuple[re.Pattern[str], str], ...], zh: bool) -> list[Hit]:
    if not (_FORMAT_CUE_ZH if zh else _FORMAT_CUE_EN).search(s):
        return []
    for pattern, value in table:
        m = pattern.search(s)
        if m:
            if _negated_before(s, m.start()):
                return []
            zh_label, en_label = _FORMAT_LABEL[value]
            statement = (
                f"用户偏好以{zh_label}形式输出" if zh else f"The user prefers output as {en_label}"
            )
            conf = CONF_PLAIN if re.search(r"(?i)我|\bi\b|\bmy\b", s) else CONF_IMPLIED
            return [Hit(FactType.PROFILE, "preferred_output_format", value, statement, conf)]
    return []


def _format_zh(s: str) -> list[Hit]:
    return _format_hit(s, _FORMAT_RES_ZH, zh=True) if detect_lang(s) == "zh" else []


def _format_en(s: str) -> list[Hit]:
    return _format_hit(s, _FORMAT_RES_EN, zh=False) if detect_lang(s) == "en" else []


_LANG_PREF_ZH = (
    re.compile(
        r"(?:用|以|说|讲)(?P<l>" + _LANG_ZH_ALT + r")(?:来|和我|跟我|给我|同我)?"
        r"(?:回复|回答|交流|沟通|对话|聊天|聊|说话|说|写|输出|回我)"
    ),
    re.compile(
        r"(?:回复|回答|交流|沟通|输出|对话)(?:请|都|一律|全部)*(?:用|以|使用)(?P<l>"
        + _LANG_ZH_ALT
        + r")"
    ),
    re.compile(
        r"我(?:更)?(?:喜欢|偏好|习惯|倾向于?)(?:用)?(?P<l>"
        + _LANG_ZH_ALT
        + r")(?:交流|沟通|回复|对话|的回复|回答)"
    ),
)


def _language_zh(s: str) -> list[Hit]:
    for pattern in _LANG_PREF_ZH:
        m = pattern.search(s)
        if m and not _negated_before(s, m.start()):
            code, zh_label, _ = _LANGUAGES[m.group("l")]
            return [Hit(FactType.PROFILE, "preferred_language", code, f"用户希望用{zh_label}回复")]
    return []


_LANG_PREF_EN = (
    re.compile(
        r"(?i)\b(?:reply|respond|answer|talk|write|speak|communicate|chat|replies|responses|answers)"
        r"(?:\s+(?:to\s+|with\s+)?me)?(?:\s+(?:only|always))?\s+in\s+(?P<l>" + _LANG_EN_ALT + r")\b"
    ),
    re.compile(
        r"(?i)\bi\s+(?:prefer|want|like)\s+(?P<l>"
        + _LANG_EN_PREF_ALT
        + r")\s*(?:replies|responses|answers)?\s*$"
    ),
    re.compile(
        r"(?i)\buse\s+(?P<l>"
        + _LANG_EN_ALT
        + r")\s+(?:with me|when (?:talking|replying)|for (?:replies|responses|answers))"
    ),
)


def _language_en(s: str) -> list[Hit]:
    for pattern in _LANG_PREF_EN:
        m = pattern.search(s)
        if m and not _negated_before(s, m.start()):
            code, _, en_label = _LANGUAGES[m.group("l").lower()]
            return [
                Hit(
                    FactType.PROFILE,
                    "preferred_language",
                    code,
                    f"The user prefers replies in {en_label}",
                )
            ]
    return []


# Languages the user speaks (language_spoken, many values), distinct from the reply
# language they want (preferred_language): "我会说粤语和普通话", "I speak Spanish and French".
_LANG_SEP_ZH = r"(?:和|、|与|跟|及|以及|还有|也会|,|/)"
_SPEAK_ZH = re.compile(
    r"(?:^|我)(?:也|还|都|只|能|可以|从小|一直)*"
    r"(?:会说|会讲|能说|能讲|会|懂|说|讲|精通|母语是|的母语是)"
    r"(?:一点|一些|点|几句|流利的|流利|一口|地道的)?"
    rf"(?P<x>(?:{_LANG_ZH_ALT})(?:{_LANG_SEP_ZH}(?:一点|一些|点)?(?:{_LANG_ZH_ALT}))*)"
    r"(?!(?:来|和我|跟我|给我|同我)?(?:回复|回答|交流|沟通|对话|聊天|聊|说话|写|输出|回我))"
)
_SPOKEN_ZH_VALUE = {"英文": "英语", "日文": "日语", "韩文": "韩语", "汉语": "中文"}
_LANG_ZH_RE = re.compile(_LANG_ZH_ALT)


def _spoken_zh(s: str) -> list[Hit]:
    m = _SPEAK_ZH.search(s)
    if not m or _negated_before(s, m.start("x")) or re.search(r"不会|不懂", s[: m.start("x")]):
        return []
    out = []
    for lang in _LANG_ZH_RE.findall(m.group("x")):
        value = _SPOKEN_ZH_VALUE.get(lang, lang)
        out.append(Hit(FactType.SEMANTIC, "language_spoken", value, f"用户会说{value}"))
    return out


_LANG_EN_WORD = r"(?:" + _LANG_EN_ALT + r")\b"
_SPEAK_EN = re.compile(
    r"(?i)\b(?:i\s+(?:(?:also|can|do|fluently|natively|only|still|even)\s+)*speak|"
    r"i(?:'m| am)\s+(?:(?:also|pretty|quite|very|fully)\s+)*(?:fluent|conversational|"
    r"bilingual|proficient)\s+in|my\s+(?:native\s+language|mother\s+tongue|first\s+language)"
    r"\s+is)\s+(?:(?:some|a\s+(?:bit|little)\s+of|a\s+little|basic|fluent|decent|native|"
    r"conversational|good|broken)\s+)?(?P<x>" + _LANG_EN_WORD + r"(?:\s*(?:,|&|/|\band\b|"
    r"\bplus\b)\s*(?:(?:some|a\s+(?:bit|little)\s+of|a\s+little|basic|fluent|"
    r"conversational)\s+)?" + _LANG_EN_WORD + r")*)"
)
_LANG_EN_RE = re.compile(r"(?i)\b(?:" + _LANG_EN_ALT + r")\b")


def _spoken_en(s: str) -> list[Hit]:
    m = _SPEAK_EN.search(s)
    if not m:
        return []
    out = []
    for lang in _LANG_EN_RE.findall(m.group("x")):
        label = _LANGUAGES[lang.lower()][2]
        out.append(Hit(FactType.SEMANTIC, "language_spoken", label, f"The user speaks {label}"))
    return out


def _carrier(s: str) -> list[Hit]:
    if not _may_name_carrier(s):
        return []
    zh = detect_lang(s) == "zh"
    for pattern, value in _CARRIER_RES:
        m = pattern.search(s)
        if not m:
            continue
        if _negated_before(s, m.start()):
            return []
        if zh:
            ambiguous = value == "JD Logistics"
            if not (_DELIVERY_CUE_ZH.search(s) or (not ambiguous and re.search(r"用|选", s))):
                return []
            surface = m.group(0)
            name = (
                surface
                if surface.endswith(("快递", "物流", "速运"))
                or not re.match(r"[\u4e00-\u9fff]", surface)
                else surface + "快递"
            )
            return [Hit(FactType.PROFILE, "delivery_carrier", value, f"用户偏好使用{name}")]
        if not _DELIVERY_CUE_EN.search(s) or not re.search(
            r"(?i)\b(?:i|my|we|our)\b|^(?:please\s+)?(?:ship|send|use|deliver|"
            r"(?:keep|continue|go on)\s+(?:using|shipping|sending)|stick with|always use)", s
        ):
            return []
        return [
            Hit(
                FactType.PROFILE,
                "delivery_carrier",
                value,
                f"The user prefers {value} for deliveries",
            )
        ]
    return []


_CUISINE_ZH = re.compile(
    r"(?:^|我)(?:很|最|特别|比较|超|非常|更|一直|也|都)*(?:喜欢|爱|偏爱|偏好|最爱)(?:吃)?"
    r"(?P<x>[\u4e00-\u9fff]{1,6}?)(?:了|的|啦|呀)?$"
)


def _cuisine_zh(s: str) -> list[Hit]:
    m = _CUISINE_ZH.search(_TRAILING_PUNCT.sub("", s))
    if not m or _negated_before(s, m.start() + 1):
        return []
    x = _clean_zh(m.group("x"))
    if not x:
        return []
    known = x in _CUISINES_ZH or x.endswith(("菜", "料理", "餐"))
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


_CUISINE_EN = (
    re.compile(
        r"(?i)\bi\s+(?:really\s+|absolutely\s+|just\s+|especially\s+)?(?:love|like|enjoy|prefer|adore)\s+"
        r"(?P<x>[a-z]+(?:\s+[a-z]+)?)\s+(?:food|cuisine|dishes)\b"
    ),
    re.compile(
        r"(?i)\bmy\s+favou?rite\s+(?:food|cuisine)\s+is\s+(?P<x>[a-z ]+?)(?:\s+(?:food|cuisine))?$"
    ),
    re.compile(
        r"(?i)\bi\s+(?:really\s+)?(?:love|like|enjoy|prefer|adore)\s+(?P<x>" + _DISHES_EN + r")$"
    ),
)


_NATIONAL_EN = frozenset(
    "thai indian mexican korean sichuan cantonese italian japanese chinese french vietnamese "
    "greek spanish turkish lebanese ethiopian american middle eastern".split()
)


def _cuisine_en(s: str) -> list[Hit]:
    s = _TRAILING_PUNCT.sub("", s)
    for index, pattern in enumerate(_CUISINE_EN):
        m = pattern.search(s)
        if m:
            x = m.group("x").lower().strip()
            if x in _NATIONAL_EN:
                label = f"{x.title()} food"
            else:
                label = f"{x} food" if index == 0 else x
            return [Hit(FactType.PROFILE, "preferred_cuisine", x, f"The user likes {label}")]
    return []


# Chinese names of common platforms and tools (the rest of the vocabulary is Latin).
_TECH_NAMES_ZH = (
    "阿里云|腾讯云|华为云|百度智能云|火山引擎|飞书|钉钉|企业微信|语雀|金山文档|腾讯文档|达梦|宝塔"
)
_TECH = (
    r"(?:[A-Za-z][A-Za-z0-9+#.\-]*(?:\s+[A-Z][A-Za-z0-9+#.\-]*)?(?:\s*v?\d+(?:\.\d+)*)?|"
    + _TECH_NAMES_ZH
    + r")"
)
_TECH_LIST = _TECH + r"(?:\s*(?:和|、|,|，|以及|跟|加|\+|/)\s*" + _TECH + r")*"
_TECH_ZH = (
    re.compile(
        r"(?P<who>我们团队|我们组|我们公司|我们项目|我们部门|我们小组|我们这边|我们|团队|公司|项目|"
        r"组里|咱们|我这边|我)(?:的)?"
        r"(?:(?:服务|系统|后端|前端|项目|代码|应用|网站|产品|数据库|集群|团队|文档)(?:都|也)?)?"
        # habit and preference words before the verb: "我习惯用 Vim", "我一般用 Go"
        r"(?:都|一直|主要|现在|目前|正在|平时|日常|在|也|还|基本|习惯|喜欢|更喜欢|偏好|爱|一般|"
        r"通常|总是|经常|常|只|还是|更)*"
        r"(?:用|使用|采用|基于|跑在|写)\s*(?P<x>" + _TECH_LIST + r")"
    ),
    re.compile(
        r"(?P<who>我们|我)?(?:的)?(?:技术栈|后端|前端|数据库|开发语言|语言|框架|编辑器|IDE|ide)"
        r"(?:是|用的是|用|采用|基于)\s*(?P<x>" + _TECH_LIST + r")"
    ),
)
# Tools often written in lower case; other items must start with a capital or a digit.
_TECH_LOWER = (
    "k8s|vim|neovim|nvim|emacs|npm|pnpm|yarn|git|kubernetes|docker|podman|postgres|postgresql|"
    "python|golang|rust|java|kotlin|typescript|javascript|nodejs|node|react|vue|svelte|"
    "django|flask|fastapi|rails|redis|mysql|sqlite|mongodb|kafka|terraform|ansible|aws|gcp|"
    "azure|linux|ubuntu|debian|fedora|macos|vscode|intellij|pycharm|jupyter|pandas|numpy|"
    "pytorch|tensorflow|airflow|dbt|snowflake|bigquery|graphql|grpc|nginx|helm|jenkins|"
    "github|gitlab|jira|notion|figma|obsidian|tmux|zsh|bash|fish"
)
_TECH_EN_ITEM = (
    r"(?:[A-Z0-9][\w+#.\-]*|(?:" + _TECH_LOWER + r")\b)"
    r"(?:\s+(?:[A-Z][\w+#.\-]*|v?\d+(?:\.\d+)*))*"
)
_TECH_EN_LIST = _TECH_EN_ITEM + r"(?:\s*(?:,|&|\+|/|(?i:and|with|plus))\s*" + _TECH_EN_ITEM + r")*"
_TECH_EN = (
    re.compile(
        r"(?P<who>(?i:\bwe|\bour\s+(?:team|company|startup|project|org|shop|group|lab|backend|"
        r"frontend|services?|app|product)|\bmy\s+(?:team|company|org|startup|group|lab)|\bi))"
        r"(?:\s+|(?='))"
        r"(?i:(?:(?:mostly|mainly|primarily|currently|now|still|all|also|only|usually|heavily|always|"
        r"generally|normally|typically)\s+)*"
        r"(?:use|uses|'re using|are using|am using|'m using|is using|are running|'re running|"
        r"(?:runs?|hosts?)(?:\s+(?:everything|it all|all\s+(?:of\s+)?(?:our\s+)?\w+|"
        r"our\s+\w+))?\s+(?:on|in|with)|deploys?(?:\s+(?:everything|it all|all\s+(?:of\s+)?"
        r"(?:our\s+)?\w+|our\s+\w+))?\s+(?:on|to)|runs?|builds? (?:with|on|in)|works? (?:with|in)|"
        r"develops? (?:with|in)|codes? in|writes?|relies on|rely on|are on|'re on|'m on|am on|"
        r"is on|standardi[sz]ed on))\s+(?P<x>" + _TECH_EN_LIST + r")"
    ),
    re.compile(
        r"(?P<who>(?i:\bour|\bmy))\s+(?i:(?:tech\s+)?(?:main\s+|primary\s+|daily\s+)?(?:stack|backend|"
        r"frontend|database|db|infra|infrastructure|language|editor|ide|os|ci|ci/cd|cd|pipeline|"
        r"cloud|cloud provider|hosting|shell|terminal|browser|orm|framework|runtime|"
        r"package manager|build tool|laptop|machine|computer|phone|desktop|server|cluster|"
        r"data warehouse|warehouse|message broker|queue|cache|monitoring|issue tracker)"
        r"(?:\s+of choice)?)\s+(?i:is|are|runs|uses|'s)\s+(?P<x>"
        + _TECH_EN_LIST
        + r")"
    ),
    # "our app is written in Go", "my site is built with Astro"
    re.compile(
        r"(?P<who>(?i:\bour|\bmy))\s+(?i:(?:app|apps|service|services|backend|frontend|site|"
        r"website|api|product|codebase|project|bot)\s+(?:is|are)\s+(?:written|built|developed|"
        r"implemented|hosted|deployed)\s+(?:in|with|on))\s+(?P<x>"
        + _TECH_EN_LIST
        + r")"
    ),
)


def _tech_items(raw: str, zh: bool) -> list[str]:
    sep = (
        r"\s*(?:和|、|,|，|以及|跟|加|\+|/)\s*"
        if zh
        else r"\s*(?:,|&|\+|/|\band\b|\bwith\b|\bplus\b)\s*"
    )
    items = []
    for part in re.split(sep, raw, flags=re.IGNORECASE):
        part = part.strip(" .")
        if part and part.lower() not in _TECH_STOP and part.split()[0].lower() not in _TECH_STOP:
            items.append(part)
    return items


def _tech(s: str) -> list[Hit]:
    zh = detect_lang(s) == "zh"
    for pattern in _TECH_ZH if zh else _TECH_EN:
        m = pattern.search(s)
        if not m:
            continue
        who = (m.group("who") or "").lower()
        team = who not in ("", "我", "我这边", "i", "my")
        hits = []
        for item in _tech_items(m.group("x"), zh):
            if zh:
                statement = f"用户的团队使用 {item}" if team else f"用户使用 {item}"
            else:
                statement = f"The user's team uses {item}" if team else f"The user uses {item}"
            hits.append(Hit(FactType.SEMANTIC, "tech_stack", item, statement))
        return hits
    return []


_NAME_BAD_START = tuple("了个一你他她它做什么外车醒过")
_NAME_CALL_ZH = re.compile(
    r"(?:^|[,，\s]|你|请|以后|就|可以|直接)叫我(?!们)(?P<n>[\u4e00-\u9fffA-Za-z]{1,8}?)(?:就行|就好|就可以|吧|即可|好了|$)"
)
_NAME_IS_ZH = (
    re.compile(r"(?:^|[,，])我(?:的名字|名字)?叫(?P<n>[\u4e00-\u9fffA-Za-z]{2,6})(?:$|[,，])"),
    re.compile(r"我的名字是(?P<n>[\u4e00-\u9fffA-Za-z]{2,8})(?:$|[,，])"),
    re.compile(r"称呼我(?:为)?(?P<n>[\u4e00-\u9fffA-Za-z]{1,8}?)(?:就行|就好|即可|吧|$)"),
)


def _name_zh(s: str) -> list[Hit]:
    s = _TRAILING_PUNCT.sub("", s)
    m = _NAME_CALL_ZH.search(s)
    if m and not _negated_before(s, m.start() + 1) and not m.group("n").startswith(_NAME_BAD_START):
        n = m.group("n")
        return [Hit(FactType.PROFILE, "preferred_name", n, f"用户希望被称为{n}", CONF_DIRECT)]
    for pattern in _NAME_IS_ZH:
        m = pattern.search(s)
        if m and not m.group("n").startswith(_NAME_BAD_START):
            n = m.group("n")
            if "叫" in m.group(0) and "叫" not in segment(m.group(0)):
                continue  # 叫外卖, 叫车: jieba reads a verb phrase, not 叫 + name
            if _negated_before(s, m.start() + 1):
                continue
            return [Hit(FactType.PROFILE, "preferred_name", n, f"用户的名字是{n}")]
    return []


_NAME_WORDS = r"(?P<n>[A-Z][\w'\-]*(?:\s+[A-Z][\w'\-]*){0,2})"
_NAME_CALL_EN = re.compile(
    r"(?i:\b(?:call\s+me|i\s+go\s+by|address\s+me\s+as|refer\s+to\s+me\s+as))\s+" + _NAME_WORDS
)
_NAME_IS_EN = re.compile(r"(?i:\bmy\s+name\s+is|\bmy\s+name's|\bthe\s+name's)\s+" + _NAME_WORDS)


def _name_en(s: str) -> list[Hit]:
    m = _NAME_CALL_EN.search(s)
    if m and not _negated_before(s, m.start() + 1):
        n = m.group("n")
        return [
            Hit(
                FactType.PROFILE,
                "preferred_name",
                n,
                f"The user wants to be called {n}",
                CONF_DIRECT,
            )
        ]
    m = _NAME_IS_EN.search(s)
    if m and not _negated_before(s, m.start() + 1):
        n = m.group("n")
        return [Hit(FactType.PROFILE, "preferred_name", n, f"The user's name is {n}")]
    return []


_LIVE_ZH = re.compile(
    r"(?:^|我)(?:现在|目前|一直|已经|也|常|长期)*(?:住在|居住在|生活在|定居在|定居|住|家在|搬到了|搬到|搬去了|搬去)"
    r"(?P<p>[\u4e00-\u9fffA-Za-z ]{2,12}?)(?:了|啦|呢|$|[,，]|的|这边|那边)"
)
_WORK_AT_ZH = re.compile(
    r"(?:^|我)(?:现在|目前|一直|也)*在(?P<p>[\u4e00-\u9fffA-Za-z ]{2,12}?)"
    r"(?:(?P<v>做|当|担任)(?P<j>[\u4e00-\u9fffA-Za-z]{2,10}?)|工作|上班|生活|任职)(?:了|呢|$|[,，])"
)
_JOB_IS_ZH = re.compile(
    r"(?:^|我)(?:现在|目前|也)*是(?:一名|一个|一位|个|名)?(?:(?P<e>[\u4e00-\u9fffA-Za-z]{2,10})的)?"
    r"(?P<j>[\u4e00-\u9fffA-Za-z]{1,12}?)(?:$|[,，]|呢|啦)"
)
_JOB_WORK_ZH = re.compile(
    r"我(?:的)?(?:工作|职业|职位)是(?P<j>[\u4e00-\u9fffA-Za-z]{1,12}?)(?:$|[,，])"
)


_LODGING_ZH = frozenset("酒店 宾馆 旅馆 民宿 医院 宿舍 家里 朋友家 这里 那里 附近".split())


def _is_place_zh(p: str) -> bool:
    return (
        p in _PLACES_ZH
        or p.endswith(("市", "省", "区", "县", "州", "镇", "村"))
        or any(p.startswith(x) for x in _PLACES_ZH)
    )


def _employer_hit_zh(e: str) -> Hit:
    return Hit(FactType.PROFILE, "employer", e, f"用户在{e}工作")


def _job_hit_zh(j: str) -> Hit:
    return Hit(FactType.PROFILE, "job_title", j, f"用户是{j}")


def _where_zh(s: str) -> list[Hit]:
    s = _TRAILING_PUNCT.sub("", s)
    m = _LIVE_ZH.search(s)
    if m:
        p = m.group("p").strip()
        if p in _LODGING_ZH:
            return []  # 住酒店: a stay, not where the user lives
        return [Hit(FactType.PROFILE, "location", p, f"用户住在{p}")]
    m = _WORK_AT_ZH.search(s)
    if m:
        p = m.group("p").strip()
        hits: list[Hit] = []
        if _is_place_zh(p):
            hits.append(Hit(FactType.PROFILE, "location", p, f"用户住在{p}", CONF_IMPLIED))
        else:
            hits.append(_employer_hit_zh(p))
        j = m.group("j")
        if j and j.endswith(_JOB_NOUNS_ZH):
            hits.append(_job_hit_zh(j))
        return hits
    m = _JOB_IS_ZH.search(s) or _JOB_WORK_ZH.search(s)
    if m and m.group("j").endswith(_JOB_NOUNS_ZH):
        hits = [_job_hit_zh(m.group("j"))]
        e = m.groupdict().get("e")
        if e and not _is_place_zh(e):
            hits.append(_employer_hit_zh(e))
        return hits
    return []


_PLACE_EN = r"(?P<p>[A-Z][\w\-']*(?:(?:\s+|,\s*)[A-Z][\w\-']*){0,3})"
_LIVE_EN = re.compile(
    r"(?i:\bi(?:\s+|(?='))(?:(?:'m|am)\s+(?:currently\s+|now\s+|still\s+)?"
    r"(?:living|based|located)|(?:currently\s+|now\s+|still\s+|just\s+|recently\s+)?"
    r"(?:live|reside|moved|have moved|'ve moved))\s+(?:in|to|at|out to))\s+"
    + _PLACE_EN
)
_EMPLOYER = r"(?P<e>[A-Z][\w&.\-]*(?:\s+[A-Z][\w&.\-]*){0,3})"
_JOB_EN = re.compile(
    r"(?i:\bi(?:'m| am)\s+(?:currently\s+|now\s+)?(?:a|an|the)|\bi\s+work\s+as\s+(?:a|an|the))\s+"
    r"(?P<j>(?i:(?:[a-z\-]+\s+){0,3}?(?:" + _JOB_NOUNS_EN + r")))\b"
    r"(?:\s+(?i:at|for|with|of)\s+" + _EMPLOYER + r")?"
)
_WORK_AT_EN = re.compile(
    r"(?i:\bi\s+(?:work|am working|'m working|currently work)\s+(?:at|for))\s+" + _EMPLOYER
)


def _where_en(s: str) -> list[Hit]:
    m = _LIVE_EN.search(s)
    if m:
        p = m.group("p").strip(" ,")
        return [Hit(FactType.PROFILE, "location", p, f"The user lives in {p}")]
    m = _JOB_EN.search(s)
    if m:
        j = m.group("j").lower()
        hits = [
            Hit(
                FactType.PROFILE,
                "job_title",
                j,
                f"The user is {'an' if j[0] in 'aeiou' else 'a'} {j}",
            )
        ]
        if m.group("e"):
            hits.append(
                Hit(FactType.PROFILE, "employer", m.group("e"), f"The user works at {m.group('e')}")
            )
        return hits
    m = _WORK_AT_EN.search(s)
    if m:
        return [
            Hit(FactType.PROFILE, "employer", m.group("e"), f"The user works at {m.group('e')}")
        ]
    return []


_MATCHERS: tuple[Matcher, ...] = (
    _constraint_zh,
    _constraint_en,
    _allergy_zh,
    _allergy_en,
    _diet_zh,
    _diet_en,
    _format_zh,
    _format_en,
    _language_zh,
    _language_en,
    _spoken_zh,
    _spoken_en,
    _carrier,
    _cuisine_zh,
    _cuisine_en,
    _tech,
    _name_zh,
    _name_en,
    _where_zh,
    _where_en,
)


def _free_statement(body: str) -> Hit | None:
    """An explicit "remember X" that no rule understood: kept as a free semantic statement."""
    body = _TRAILING_PUNCT.sub("", body).strip()
    if len(body) < 2 or re.match(r"(?i)^to\s", body):
        return None  # "remember to buy milk" is a task, not a memory
    if detect_lang(body) == "zh":
        if body.startswith("我"):
            statement = body.replace("我的", "用户的").replace("我", "用户")
        else:
            statement = f"用户要求记住：{body}"
    else:
        statement = _third_person_en(body)
    return Hit(FactType.SEMANTIC, None, body, statement, CONF_EXPLICIT)


def _prefs(
    matchers: Sequence[extract_prefs.PrefMatcher], body: str, found: Sequence[Hit]
) -> list[Hit]:
    """The general patterns' hits (extract_prefs), minus values a typed rule already has."""
    seen = {(h.predicate, str(h.value)) for h in found}
    out = []
    for matcher in matchers:
        for p in matcher(body):
            if (p.predicate, p.value) not in seen:
                seen.add((p.predicate, p.value))
                out.append(Hit(p.type, p.predicate, p.value, p.statement, p.confidence))
    return out


def extract_sentence(sentence: str, *, force_explicit: bool = False) -> tuple[list[Hit], bool]:
    """Hits in one sentence, and whether it was an explicit instruction (SPEC §5)."""
    s = nfkc(sentence).strip()
    s = _FILLER.sub("", s)
    if not _TRAILING_PUNCT.sub("", s):
        return [], False
    screened = _screen(s)
    if screened is None:
        return [], False
    instruction = peel_instruction(screened)
    explicit = instruction.explicit or force_explicit
    body = instruction.body
    if not body or (instruction.explicit and _GROUP_MARKER.match(body)):
        return [], explicit
    # "remember that from now on …": the rules read what follows the second prefix too
    inner = peel_instruction(body).body if instruction.remember else body
    inner = inner or body
    hits: list[Hit] = []
    for matcher in _MATCHERS:
        hits.extend(matcher(inner))
    hits.extend(_prefs(extract_prefs.TYPED, inner, hits))
    if explicit:
        # bare imperatives about the answers ("直接回答", "keep it short") are a rule only
        # when the user made them one ("以后…", "from now on…", "记住…")
        hits.extend(_prefs(extract_prefs.STANDING, inner, hits))
    if not hits:
        # no typed rule understood it: a first-person preference, habit, trait or
        # attribute is kept as a free statement ("I prefer dark mode in every editor")
        hits.extend(_prefs(extract_prefs.FALLBACK, inner, hits))
    if not hits and instruction.explicit and instruction.remember:
        free = _free_statement(body)
        if free is not None:
            hits.append(free)
    hedged = bool(_HEDGE_ZH.search(body) or _HEDGE_EN.search(body))
    out = []
    for hit in hits:
        conf = CONF_EXPLICIT if explicit or hit.standing else hit.confidence
        if hedged:
            conf -= HEDGE_PENALTY
        if conf < MIN_CONFIDENCE:
            continue
        out.append(
            Hit(
                hit.type,
                hit.predicate,
                hit.value,
                hit.statement[:MAX_STATEMENT_CHARS],
                round(conf, 2),
                explicit or hit.standing,
            )
        )
    return out, explicit and bool(out)


class RuleExtractor:
    """The offline default: regular expressions and rjieba over user turns."""

    name = "rules"

    async def extract(
        self,
        turns: Sequence[Turn],
        *,
        user_id: str,
        scope: str = "global",
        max_candidates_per_turn: int = 3,
    ) -> list[Candidate]:
        return self.extract_sync(
            turns, user_id=user_id, scope=scope, max_candidates_per_turn=max_candidates_per_turn
        )

    def extract_sync(
        self,
        turns: Sequence[Turn],
        *,
        user_id: str,
        scope: str = "global",
        max_candidates_per_turn: int = 3,
    ) -> list[Candidate]:
        """Pure CPU work, no I/O: callable from sync code and benchmarks."""
        out: list[Candidate] = []
        for turn in turns:
            if turn.role != "user" or not turn.content:
                continue  # the assistant's, system's and tools' words never become memories
            out.extend(self._turn_candidates(turn, user_id=user_id, scope=scope))
        return cap_per_turn(out, max_candidates_per_turn)

    def _turn_candidates(self, turn: Turn, *, user_id: str, scope: str) -> list[Candidate]:
        if is_sarcastic(turn.content):
            return []
        found: list[tuple[Hit, bool, str]] = []
        group_explicit = False
        for sentence in split_sentences(turn.content):
            hits, explicit = extract_sentence(sentence, force_explicit=group_explicit)
            if explicit and not hits:
                # "请记住以下几点：" / "Remember this:" makes the next sentences explicit too.
                group_explicit = True
            found.extend((hit, hit.standing, sentence) for hit in hits)
        return [
            Candidate(
                user_id=user_id,
                type=hit.type,
                statement=hit.statement,
                value=hit.value,
                predicate=hit.predicate,
                scope=scope,
                source_kind=SourceKind.EXPLICIT_INSTRUCTION
                if explicit
                else SourceKind.USER_MESSAGE,
                turn_id=turn.turn_id,
                evidence=sentence[:MAX_EVIDENCE_CHARS],
                confidence=hit.confidence,
                origin=Origin.EXTRACTED,
            )
            for hit, explicit, sentence in _dedupe(found)
        ]


def _dedupe(found: list[tuple[Hit, bool, str]]) -> list[tuple[Hit, bool, str]]:
    """One hit per (predicate, value), one per single-valued predicate: most confident, last."""
    best: dict[tuple[str | None, str], int] = {}
    for index, (hit, _, _) in enumerate(found):
        key = (
            (hit.predicate, str(hit.value))
            if hit.predicate in _MANY or hit.predicate is None
            else (hit.predicate, "")
        )
        prev = best.get(key)
        if prev is None or hit.confidence >= found[prev][0].confidence:
            best[key] = index
    keep = set(best.values())
    return [item for index, item in enumerate(found) if index in keep]
