"""Screening, before any matcher reads a sentence: a leading greeting or filler is
stripped; questions, hypotheticals, reported speech, past, one-off and doubtful content are
dropped; sarcasm anywhere drops the whole turn (`is_sarcastic`)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from app.memory.prefilter import rx
from app.memory.text import THIS_TIME_ZH, nfkc, segment
from app.providers.rules.text import TRAILING_PUNCT

# Sarcasm or joking anywhere in a turn makes the whole turn unreliable.
_SARCASM = rx(
    r"呵呵|才怪|好个屁|反话|开玩笑|开个玩笑|逗你的?|骗你的|🙄|😒|🙃|"
    r"(?:太|真|可|好)[\"'“”‘’「」『』](?:好|棒|喜欢|爱|开心|完美|优秀|贴心|专业|聪明)[\"'“”‘’「」『』]|"
    r"(?i:(?<!\w)/s\b|\byeah,? right\b|\bas if\b|\bjust kidding\b|\bjk\b|\bnot\s*!+\s*$|"
    r"\boh,? (?:great|wonderful|joy|fantastic)\b|"
    r"[\"'“‘](?:love|great|helpful|nice|perfect|amazing)[\"'”’])"
)
_SARCASM_CAPS = rx(r"\b(?:LOVE|ADORE|ENJOY|LIKE)\b")

_HYPOTHETICAL_ZH = frozenset(
    "如果 假如 假设 要是 万一 倘若 假使 若是 如若 假若 设想 想象 的话 如果说 要不是".split()
)
_HYPOTHETICAL_EN = rx(
    r"(?i)\b(?:if|what if|suppose|supposing|imagine|imagining|assuming|hypothetically|"
    r"let'?s say|pretend|in case|whether|were i)\b"
)

_QUESTION_ZH = frozenset(
    "什么 怎么 怎么样 怎样 为什么 为啥 哪 哪里 哪儿 哪个 哪些 谁 多少 是不是 是否 有没有 "
    "能不能 可不可以 要不要 会不会 对不对 好不好 行不行 几点 如何 咋 啥 吗 么".split()
)
_QUESTION_END_ZH = rx(r"(?:吗|呢|么|嘛\?|\?)\s*$")
_QUESTION_EN = rx(
    r"(?i)^(?:do|does|did|can|could|would|will|should|shall|is|are|am|was|were|have|has|"
    r"what|why|how|when|where|who|whom|whose|which|may|might|isn't|aren't|don't you|"
    r"didn't|won't|wouldn't)\b"
)
# A polite request that carries a standing instruction is not a question:
# "can you remember that I like tables?", "你能记住我用表格吗？", "以后能不能都用中文？"
_POLITE_EN = rx(
    r"(?i)^(?:can|could|would|will)\s+you\s+(?:please\s+)?"
    r"(?=remember|always|never|from now on|stop|not\b|keep in mind|note)"
)


def _polite_tail_en(s: str) -> str:
    """ "…, please?" off the end, without a regex (a trailing-blanks search is quadratic)."""
    end = len(s)
    while end and (s[end - 1].isspace() or s[end - 1] == "?"):
        end -= 1
    if s[:end].lower().endswith("please"):
        end -= len("please")
    while end and (s[end - 1].isspace() or s[end - 1] == ","):
        end -= 1
    return s[:end]


_POLITE_ZH = rx(
    r"^(?:请问|麻烦)?你?(?:能不能|可不可以|能|可以)(?=记住|记下|以后|今后|从现在起|一直|永远)"
)
_POLITE_ZH_INNER = rx(r"^(以后|今后|从现在起)(?:能不能|可不可以|能|可以)")
_POLITE_TAIL_ZH = rx(r"(?:好吗|可以吗|行吗|好不好|行不行|可不可以|吗|呢|吧)?(?<!\s)\s*\?*$")

_THIRD_PARTY_ZH = rx(
    r"我(?:的|们家|家)?(?:朋友|同事|老板|领导|妈妈|妈|爸爸|爸|父母|老婆|老公|媳妇|丈夫|妻子|太太|"
    r"先生|女朋友|男朋友|对象|孩子|儿子|女儿|哥哥|哥|姐姐|姐|弟弟|弟|妹妹|妹|室友|邻居|客户|"
    r"家人|家里人|奶奶|爷爷|外婆|外公|同学|上司|经理|医生|老师|宝宝|闺蜜|兄弟)|"
    r"我们家|全家|家里人|听说|据说|据称|人家说|别人说|有人说|"
    r"(?:朋友|同事|老板|领导|医生|老师|妈|爸|老婆|老公)(?:们)?(?:跟我|对我|和我)?(?:说|讲|告诉我|觉得|认为)"
)
_THIRD_PERSON_ZH = frozenset("他 她 他们 她们 它们 他的 她的".split())
_THIRD_PARTY_EN = rx(
    r"(?i)\bmy\s+(?:best\s+|old\s+|little\s+|big\s+|younger\s+|older\s+)?(?:friends?|wife|husband|partner|"
    r"boss|manager|colleagues?|co-?workers?|mom|mum|mother|dad|father|parents|brothers?|"
    r"sisters?|sons?|daughters?|kids?|child|children|girlfriend|boyfriend|roommates?|"
    r"neighbou?rs?|clients?|customers?|family|grandma|grandpa|grandmother|grandfather|"
    r"uncle|aunt|cousins?|doctor|teacher|spouse|fianc[eé]e?|baby)\b|"
    r"\b(?:he|she|they|him|her|them|his|hers|their|theirs)\b|"
    r"\b(?:said|says|told me|tells me|told us|according to|heard that|apparently|claims?)\b"
)

_PAST_ZH = rx(r"(?:^|我)(?:以前|曾经|过去|原来|之前|小时候)|不再|已经不")
_PAST_EN = rx(
    r"(?i)\b(?:used to|formerly|previously|no longer|not anymore|back when|in the past|"
    r"once was|was once)\b"
)
_TRANSIENT_ZH = rx(r"今天|今晚|明天|" + THIS_TIME_ZH + r"|暂时|临时|这个问题|这篇|这份|这一题")
_TRANSIENT_EN = rx(
    r"(?i)\b(?:today|tonight|tomorrow|this time|for now|right now|just this once|this once|"
    r"for this (?:one|question|task|answer|report|email|doc|document|reply))\b"
)
HEDGE_ZH = rx(r"好像|可能|也许|大概|似乎|说不定|估计|应该是|我猜|我觉得|感觉|或许|貌似")
HEDGE_EN = rx(
    r"(?i)\b(?:maybe|perhaps|probably|i think|i guess|i believe|possibly|might|kind of|"
    r"sort of|i suppose)\b"
)
_DOUBT = rx(r"(?i)不确定|不知道是不是|说不准|\bnot sure\b|\bno idea\b|\bi doubt\b|\bunsure\b")


# Greetings and filler before the real sentence ("你好，", "Hi, ", "好的，", "ok, "): stripped
# before screening, so "你好，记住我用表格输出" is the explicit instruction it would be
# without the greeting. Each needs its punctuation, so "好吃" or "Hiking" are left alone.
FILLER = rx(
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
_WHEN_STATEMENT_EN = rx(r"(?i)^when(?:ever)?\s+i\s+.+?(?:,\s*|\s)i\s+\w+")


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
        return _polite_tail_en(s[m.end() :])
    m = _POLITE_ZH.match(s)
    if m:
        return _POLITE_TAIL_ZH.sub("", s[m.end() :])
    m = _POLITE_ZH_INNER.match(s)
    if m:
        return m.group(1) + _POLITE_TAIL_ZH.sub("", s[m.end() :])
    return None


# The user's own household, said with the user in it: "my wife and I live in Porto",
# "my kids are 4 and 7", "我和老婆住在波尔图", "我家孩子一个四岁一个七岁". A profile fact
# (docs/extraction.md), not another person's data: the gate still refuses a relative's
# contact, health or money data (docs/gate.md, third_party_pii).
_HOUSEHOLD_EN = rx(
    r"(?i)^my\s+(?:wife|husband|partner|family|girlfriend|boyfriend|fianc[eé]e?|kids|children)"
    r"\s+and\s+i\s+(?:live|are\s+based|moved|have\s+moved|just\s+moved)\s+(?:in|to)\s+[^,]{2,40}$"
    r"|^my\s+(?:kids|children|sons|daughters|twins|son|daughter)\s+(?:is|are)\s+"
    r"(?:\d{1,2}|[a-z]+teen)(?:\s+(?:and|&)\s+\d{1,2})?(?:\s+years?\s+old)?$"
)
_HOUSEHOLD_ZH = rx(
    r"^我和(?:老婆|老公|妻子|丈夫|爱人|对象|家人|男朋友|女朋友|孩子们?)(?:一起)?"
    r"(?:住在|住|生活在|定居在|定居|搬到了?)[\u4e00-\u9fffA-Za-z ]{2,12}$"
    r"|^我(?:家)?(?:的)?(?:孩子|儿子|女儿|小孩|闺女|宝宝)(?:们)?(?:今年)?"
    r"(?:(?:一个|老大|老二)?[\d一二三四五六七八九十两]{1,2}岁了?){1,3}$"
)


def is_question(s: str) -> bool:
    """A question that is not a polite request ("can you remember that I like tables?")."""
    return _is_question(s, segment(s)) and _unwrap_polite(s) is None


# A condition opens: what follows is the condition's, not a standing fact of the user
# ("一旦收到老板的微信，我负责直接打款", "whenever my boss texts, I send the money").
_CONDITION = rx(
    r"(?i)^(?:if|when|whenever|once|unless|as\s+soon\s+as|every\s+time)\b|^(?:一旦|只要|如果|每当|凡是|要是|假如|万一)"
)


def opens_condition(clause: str) -> bool:
    return bool(_CONDITION.match(clause.strip()))


def is_hypothetical(s: str) -> bool:
    """ "要是我是产品经理，我会用表格", "if I were rich, I'd fly business": the whole sentence is
    a supposition, whichever clause says it."""
    return bool(_HYPOTHETICAL_ZH.intersection(segment(s)) or _HYPOTHETICAL_EN.search(s))


def screen(s: str) -> str | None:
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
    s = TRAILING_PUNCT.sub("", s)
    if _HYPOTHETICAL_ZH.intersection(tokens) or _HYPOTHETICAL_EN.search(s):
        return None
    household = bool(_HOUSEHOLD_EN.match(s) or _HOUSEHOLD_ZH.match(s))
    if not household and (_THIRD_PARTY_ZH.search(s) or _THIRD_PERSON_ZH.intersection(tokens)):
        return None
    if not household and _THIRD_PARTY_EN.search(s):
        return None
    if _PAST_ZH.search(s) or _PAST_EN.search(s):
        return None
    if _TRANSIENT_ZH.search(s) or _TRANSIENT_EN.search(s):
        return None
    if _DOUBT.search(s):
        return None
    return s
