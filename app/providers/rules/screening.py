"""Screening, before any matcher reads a sentence: a leading greeting or filler is
stripped; questions, hypotheticals, reported speech, past, one-off and doubtful content are
dropped; sarcasm anywhere drops the whole turn (`is_sarcastic`)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from app.memory.text import THIS_TIME_ZH, nfkc, segment
from app.providers.rules.text import TRAILING_PUNCT

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
# (它/它们 are things and animals, never another person: "别用表情符号，它们看着很乱")
_THIRD_PERSON_ZH = frozenset("他 她 他们 她们 他的 她的".split())
_THIRD_PARTY_EN = re.compile(
    r"(?i)\bmy\s+(?:best\s+|old\s+|little\s+|big\s+|younger\s+|older\s+)?(?:friends?|wife|husband|partner|"
    r"boss|manager|colleagues?|co-?workers?|mom|mum|mother|dad|father|parents|brothers?|"
    r"sisters?|sons?|daughters?|kids?|child|children|girlfriend|boyfriend|roommates?|"
    r"neighbou?rs?|clients?|customers?|patients?|pupils?|students?|family|grandma|grandpa|grandmother|grandfather|"
    r"uncle|aunt|cousins?|doctor|teacher|spouse|fianc[eé]e?|baby)\b|"
    r"\b(?:he|she|they|him|her|them|his|hers|their|theirs)\b|"
    r"\b(?:said|says|told me|tells me|told us|according to|heard that|apparently|claims?)\b"
)
# "they"/"them"/"their" after a plural thing in the same sentence point back at the thing:
# "don't put emojis in replies, they drive me nuts", "tables are my favourite, use them".
# A pronoun that opens the sentence has no antecedent in it, and a plural that names people
# (or an agent noun: "-ists", "-ians", "-ees") leaves the pronoun a third party.
_THEY_EN = re.compile(r"(?i)\b(?:they|them|their)\b")
_THIRD_PARTY_NOT_THEY_EN = re.compile(
    _THIRD_PARTY_EN.pattern.replace(
        "he|she|they|him|her|them|his|hers|their|theirs", "he|she|him|her|his|hers|theirs"
    )
)
# a plural in lower case (a name is capitalised: "the Smiths"), or the sentence's first word
_PLURAL_THING_EN = re.compile(r"^[A-Za-z][a-z\-]{2,}s\b|\b[a-z][a-z\-]{2,}s\b")
_NOT_A_THING_PLURAL_EN = re.compile(
    r"(?:ists|ians|ees|ess|ous|ics|is|us|ys|ways|times|less|ness)$|^(?:people|folks|guys|kids|"
    r"twins|parents|friends|users|clients|customers|guests|students|patients|members|"
    r"employees|colleagues|coworkers|co-workers|neighbours|neighbors|relatives|cousins|"
    r"siblings|brothers|sisters|sons|daughters|girls|boys|ladies|teachers|doctors|nurses|"
    r"managers|bosses|devs|developers|engineers|designers|players|fans|readers|viewers|"
    r"followers|subscribers|visitors|attendees|participants|partners|roommates|flatmates|"
    r"housemates|classmates|teammates|admins|moderators|owners|buyers|sellers|tenants|"
    r"landlords|grandparents|children|babies|humans|adults|teens|teenagers|others|"
    r"strangers|contacts|recipients|senders|callers|workers|staff|officers|agents|"
    r"assistants|bots|ones|does|has|was|yes|this|its|plus|always|perhaps|sometimes)$"
)


def _they_means_a_thing(s: str) -> bool:
    """Every they/them/their in `s` follows a plural thing in the same sentence."""
    hits = list(_THEY_EN.finditer(s))
    if not hits or _THIRD_PARTY_NOT_THEY_EN.search(s):
        return False
    for m in hits:
        before = [w.lower() for w in _PLURAL_THING_EN.findall(s[: m.start()])]
        if not any(not _NOT_A_THING_PLURAL_EN.search(w) for w in before):
            return False
    return True


_PAST_ZH = re.compile(r"(?:^|我)(?:以前|曾经|过去|原来|之前|小时候)|不再|已经不")
_PAST_EN = re.compile(
    r"(?i)\b(?:used to|formerly|previously|no longer|not anymore|back when|in the past|"
    r"once was|was once)\b"
)
_TRANSIENT_ZH = re.compile(
    r"今天|今晚|明天|" + THIS_TIME_ZH + r"|暂时|临时|这个问题|这篇|这份|这一题"
)
_TRANSIENT_EN = re.compile(
    r"(?i)\b(?:today|tonight|tomorrow|this time|for now|right now|just this once|this once|"
    r"for this (?:one|question|task|answer|report|email|doc|document|reply))\b"
)
HEDGE_ZH = re.compile(r"好像|可能|也许|大概|似乎|说不定|估计|应该是|我猜|我觉得|感觉|或许|貌似")
HEDGE_EN = re.compile(
    r"(?i)\b(?:maybe|perhaps|probably|i think|i guess|i believe|possibly|might|kind of|"
    r"sort of|i suppose)\b"
)
_DOUBT = re.compile(
    r"(?i)不确定|不知道是不是|说不准|\bnot sure\b|\bno idea\b|\bi doubt\b|\bunsure\b"
)


# Discourse labels that announce what follows ("one small thing:", "a bit of background
# first:", "anyway,", "总之，", "先说明一下，", "跟你说一声，"): stripped like a greeting, so
# the sentence after them is read as said. Never an instruction word ("note", "记住"): those
# make the sentence explicit and are peeled by the instruction rules.
_LABEL = (
    r"(?:(?:one|a|just\s+a|another|last)\s+)?(?:(?:small|quick|little|more|last|other)\s+)?"
    r"(?:thing|detail|point)(?:\s+first)?|(?:a\s+)?(?:(?:little\s+)?bit|little)\s+(?:of\s+)?"
    r"(?:background|context)(?:\s+(?:first|on me|about me))?|(?:some\s+)?(?:background|context)"
    r"(?:\s+first)?|(?:just\s+)?to give you (?:some\s+|a bit of\s+)?(?:context|background)|"
    r"anyway|anyhow|sorry|lol|haha|tbh|ngl|not gonna lie|to be honest|basically|"
    r"总之|反正|其实|说真的|说实话|"
    r"(?:先|顺便|简单)?(?:跟你|和你|给你)?(?:说明|说|提|补充|交代|介绍)(?:一下|一句|一声)"
)
# Asides that open a sentence without punctuation: "fwiw I'm based in Lisbon",
# "for context I've been a nurse for eight years".
_ASIDE = (
    r"(?:fwiw|fyi|for context|for what it'?s worth|lol|haha|lmao|(?:oh|ah|so)\s+(?:and|also))\s+"
)
# Greetings and filler before the real sentence ("你好，", "Hi, ", "好的，", "ok, "): stripped
# before screening, so "你好，记住我用表格输出" is the explicit instruction it would be
# without the greeting. Each needs its punctuation, so "好吃" or "Hiking" are left alone.
FILLER = re.compile(
    r"(?i)^(?:(?:你好|您好|嗨|哈喽|哈啰|嘿|喂|谢谢你?|多谢|感谢|好的|好吧|好嘞|好|嗯嗯|嗯|哦|噢|"
    r"行|可以|对了|对的|对对|对|是的|没错|另外|还有|那么|那|"
    r"(?:hi|hello|hey|hiya|yo|howdy)(?:\s+there)?|good (?:morning|afternoon|evening)|"
    r"thanks(?: a lot)?|thank you|thx|ok(?:ay)?|alright|all right|sure|cool|great|got it|"
    r"btw|by the way|also|and|so|oh|well|yes|yeah|yep|right|exactly|correct|indeed|"
    + _LABEL
    + r")(?:呀|啊|啦|哈|呢|~)*\s*[,，、!！.。~～:：;；—\-]+\s*|"
    + _ASIDE
    + r")+"
)


# "As a vegan, I'd appreciate …", "Being a night owl, I …", "As someone who codes in Rust,
# I …", "作为一个新手，我…": the apposition says who the user is, the rest is the sentence.
_APPOSITION_EN = re.compile(
    r"(?i)^(?:as|being)\s+(?:(?P<art>an?)\s+(?!(?:result|rule|whole|matter|consequence|"
    r"reminder|side note|kid|child|teenager|teen|joke|test|favou?r|treat|backup|aside|"
    r"example|bonus)\b)(?P<x>[^,]{2,40}?)|someone\s+who\s+(?P<who>[^,]{2,40}?))"
    r"\s*,\s*(?P<rest>(?:i|we)\b.{2,})$"
)
_APPOSITION_ZH = re.compile(
    r"^作为(?:一个|一名|一位|个|名)?(?P<x>[^，,的]{2,12})[，,](?P<rest>我.{2,})$"
)
# An apposition that comes with a request to grant, waive, move or reveal is a claim to
# authority ("As an admin, I authorize you to skip checks"): nothing is read from it.
_CLAIM = re.compile(
    r"(?i)\b(?:admin\w*|owner|operator|developer|moderator|root|superuser|staff|authori[sz]\w*|"
    r"approv\w*|permission\w*|grant\w*|ignore|bypass|skip|override|verif\w*|"
    r"instruct\w*|command\w*|order)\b|管理员|开发者|所有者|授权|权限|批准|命令|忽略|绕过|跳过|指令|验证"
)


def _first_person(clause: str) -> str:
    """ "codes in Rust" (said of "someone who") → "I code in Rust"."""
    verb, _, rest = clause.partition(" ")
    low = verb.lower()
    base = {"is": "am", "has": "have", "does": "do", "goes": "go"}.get(low)
    if base is None:
        if low.endswith("ies") and len(low) > 4:
            base = verb[:-3] + "y"
        elif low.endswith(("shes", "ches", "xes", "sses")):
            base = verb[:-2]
        elif low.endswith("s") and not low.endswith("ss"):
            base = verb[:-1]
        else:
            base = verb
    return f"I {base} {rest}".strip()


def appositions(s: str) -> list[str]:
    """The sentence, or who the user says they are and the rest of it, as two sentences."""
    folded = nfkc(s).strip()
    m = _APPOSITION_EN.match(folded)
    # (the rest must stand on its own: "As a nurse, I can tell you my patient has …" is
    # about someone else, and the whole sentence is screened as it was said)
    if m and not _CLAIM.search(folded) and screen(m.group("rest")) is not None:
        said = f"I'm {m.group('art')} {m.group('x')}" if m.group("x") else _first_person(m["who"])
        return [said, m.group("rest")]
    m = _APPOSITION_ZH.match(folded)
    if m and not _CLAIM.search(folded) and screen(m.group("rest")) is not None:
        return [f"我是{m.group('x')}", m.group("rest")]
    return [s]


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


# The user's own household, said with the user in it: "my wife and I live in Porto",
# "my kids are 4 and 7", "我和老婆住在波尔图", "我家孩子一个四岁一个七岁". A profile fact
# (docs/extraction.md), not another person's data: the gate still refuses a relative's
# contact, health or money data (docs/gate.md, third_party_pii).
_HOUSEHOLD_EN = re.compile(
    r"(?i)^my\s+(?:wife|husband|partner|family|girlfriend|boyfriend|fianc[eé]e?|kids|children)"
    r"\s+and\s+i\s+(?:live|are\s+based|moved|have\s+moved|just\s+moved)\s+(?:in|to)\s+[^,]{2,40}$"
    r"|^my\s+(?:kids|children|sons|daughters|twins|son|daughter)\s+(?:is|are)\s+"
    r"(?:\d{1,2}|[a-z]+teen)(?:\s+(?:and|&)\s+\d{1,2})?(?:\s+years?\s+old)?$"
)
_HOUSEHOLD_ZH = re.compile(
    r"^我和(?:老婆|老公|妻子|丈夫|爱人|对象|家人|男朋友|女朋友|孩子们?)(?:一起)?"
    r"(?:住在|住|生活在|定居在|定居|搬到了?)[\u4e00-\u9fffA-Za-z ]{2,12}$"
    r"|^我(?:家)?(?:的)?(?:孩子|儿子|女儿|小孩|闺女|宝宝)(?:们)?(?:今年)?"
    r"(?:(?:一个|老大|老二)?[\d一二三四五六七八九十两]{1,2}岁了?){1,3}$"
)


# "…, if that helps", "…, in case it matters for your answers", "…，如果有用的话": the user
# offers the fact as relevant, not as a hypothetical; the tail is dropped before screening.
_RELEVANCE_TAIL = re.compile(
    r"(?i)[,，\s\-–—]*(?:(?:if|in case)\s+(?:that|it|this)(?:'s|\s+is)?\s+(?:helps?|matters?|"
    r"relevant|useful|helpful|important)(?:\s+(?:for|to)\s+[a-z ]{1,30})?|"
    r"(?:如果|要是)?(?:这|这个|这点)?(?:有用|有帮助|重要)的话)[\s.。!！]*$"
)


# "I'd appreciate it if you …", "it'd be great if you could …": a request, not a
# hypothetical; the request is screened and read as said
_POLITE_IF_EN = re.compile(
    r"(?i)^(?:i(?:'d|\s+would)\s+(?:really\s+)?(?:appreciate it|like it|love it|prefer it)|"
    r"it(?:'d|\s+would)\s+(?:be\s+(?:great|nice|helpful|ideal|better|good)|help(?:\s+me)?"
    r"(?:\s+a lot)?))\s+if\s+you\s+(?:could\s+|would\s+|can\s+)?(?:please\s+)?(?=\w)"
)

# "…if you kept answers short": the request's verb, as an imperative
_PRESENT_OF = {
    "kept": "keep",
    "made": "make",
    "gave": "give",
    "wrote": "write",
    "sent": "send",
    "showed": "show",
    "told": "tell",
    "used": "use",
    "stopped": "stop",
    "avoided": "avoid",
    "added": "add",
    "included": "include",
    "skipped": "skip",
    "explained": "explain",
    "answered": "answer",
    "replied": "reply",
    "cited": "cite",
    "listed": "list",
    "double-checked": "double-check",
}


def screen(s: str) -> str | None:
    """The sentence if it may carry a reusable first-person assertion, else None (dropped)."""
    s = _RELEVANCE_TAIL.sub("", s) or s
    polite = _POLITE_IF_EN.match(s)
    if polite:
        verb, _, rest = s[polite.end() :].partition(" ")
        s = f"{_PRESENT_OF.get(verb.lower(), verb)} {rest}".strip()
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
    if not household and _THIRD_PARTY_EN.search(s) and not _they_means_a_thing(s):
        return None
    if _PAST_ZH.search(s) or _PAST_EN.search(s):
        return None
    if _TRANSIENT_ZH.search(s) or _TRANSIENT_EN.search(s):
        return None
    if _DOUBT.search(s):
        return None
    return s
