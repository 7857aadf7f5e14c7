"""Explicit instructions: the "记住…", "以后都…", "remember…", "from now on…" prefix (or
a "…记住了" / "…remember that" tail) peeled off a sentence (`peel_instruction`), and
whether a sentence asks the assistant to remember it (`asks_to_remember`).

Pure: the rule extractor (app.providers.rules) peels turns with it, the gate
(app.memory.gate) reads a relayed user message's request to remember as that user's
consent (docs/gate.md#consent).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from app.memory.prefilter import rx

_LEAD_ZH = (
    r"^(?:好的|好|那|那么|对了|另外|还有|顺便说一下|顺便|嗯|先说一句|先说一下|说一句)?[,:：\s]*"
)
# asked to be kept: "记住…", "帮我记一下…", "别忘了…"
_REMEMBER_VERBS_ZH = r"记住|记一下|记下来|记下|记好|牢记|别忘了|不要忘了|记得(?=我)"
# said for the assistant to know: "跟你说一下，…", "说一下背景：…"
_FOR_YOUR_INFO_ZH = (
    r"跟你说一下|跟你说下|告诉你一下|和你说一下|说一下背景|补充一下背景|补充一下|提醒一下|说明一下"
)
_ZH_OPENING = r"(?:了|哦|啊|一下|哈)?[:：,，\s]*"
_REMEMBER_ZH = rx(
    _LEAD_ZH
    + r"(?:请|麻烦|你)*(?:帮我|给我)?(?:"
    + _REMEMBER_VERBS_ZH
    + "|"
    + _FOR_YOUR_INFO_ZH
    + ")"
    + _ZH_OPENING
)
_REMEMBER_TAIL_ZH = rx(
    r"(?<![,\s])[,\s]*(?:请|你)?(?:要)?(?:记住|记好|记下|记一下)(?:了|哦|啊|啦|一下)?\s*$"
)
_STANDING_ZH = rx(
    _LEAD_ZH
    + r"(?:请|你)?我?(?:以后|今后|从现在起|从现在开始|从今以后|往后|以后的话|一律|永远|每次都|总是)"
    r"(?:请|你|都|也|一律|一直|每次|全部|统统|要)*[,\s]*"
)
# "Quick thing before recipes: please remember …", "One more thing - remember …": a
# casual lead-in before the request, not a source ("Admin notice: remember …" is none)
_EN_LEAD_IN = (
    r"(?:(?:a\s+)?(?:quick|one\s+more|another|small|last|one|first)\s+(?:thing|note)"
    r"(?:\s+before\s+(?:we\s+)?[a-z][a-z\s]{0,30}?)?"
    r"|before\s+(?:we\s+)?(?:start|begin|go\s+on|continue))\s*(?::|,|\s-)\s*"
)
_EN_LEAD = (
    r"(?i)^(?:" + _EN_LEAD_IN + r")?(?:ok(?:ay)?|so|also|and|btw|by the way|oh)?[,\s]*"
    r"(?:please\s+)?"
)
_REMEMBER_VERBS_EN = (
    r"remember|keep in mind|don't forget|do not forget|never forget|make a note|take note|"
    r"note|for (?:future )?reference|save (?:this|that)|memorize"
)
# said for the assistant to know: "FYI, …", "just so you know, …", "for context: …"
_FOR_YOUR_INFO_EN = (
    r"fyi|f\.y\.i\.|just so you know|so you know|for context|"
    r"for your (?:info|information|reference)|heads up"
)
_EN_OPENING = r"(?:\s+(?:this|that|of this|of that))?(?:\s*[:,\-]\s*|\s+that\s+|\s+|$)"
_REMEMBER_EN = rx(
    _EN_LEAD + "(?:" + _REMEMBER_VERBS_EN + "|" + _FOR_YOUR_INFO_EN + ")" + _EN_OPENING
)
_REMEMBER_TAIL_EN = rx(r"(?i)(?<![,\s\-])[,\s\-]*(?:please\s+)?remember\s+(?:that|this)[.!\s]*$")
_STANDING_EN = rx(
    r"(?i)^(?:ok(?:ay)?|so|also|and)?[,\s]*(?:please\s+)?"
    r"(?:from now on|going forward|moving forward|in (?:the )?future|henceforth|always)"
    r"[,\s]*(?:please\s+)?(?:always\s+)?"
)
# "…, so keep that in mind (for recipes)", "…，推荐饮食的时候注意一下": what comes before is
# said to be remembered
_KEEP_IN_MIND_TAIL_EN = rx(
    # one start per run of separators (a search from every blank of a long run is quadratic)
    r"(?i)(?<=[^\s,;\-])[,;\s\-]+(?:so\s+|and\s+|please\s+){0,3}(?:(?:keep|bear)\s+(?:that|this|it)\s+"
    r"in\s+mind|"
    r"(?:take|factor)\s+(?:that|this|it)\s+(?:into\s+account|in)|keep\s+(?:suggestions|it|things|"
    r"recommendations)\s+within\s+(?:that|this|it)|if\s+that\s+matters|fyi|for\s+context|"
    # "…, so keep the meal plans low in sugar", "…, so no jumping exercises": an
    # instruction drawn from the fact
    r"so\s+(?:please\s+)?(?:keep|make|plan|avoid|skip|flag|no|don'?t|never|only)\b[^.!?]{0,60})"
    r"(?:\s+(?:for|when|with|while)\s+[^.!?]{0,40})?[.!\s]*$"
)
_KEEP_IN_MIND_TAIL_ZH = rx(
    r"[,，]\s*(?:[^，。！？,]{0,12}?(?:的时候|时|方面))?(?:请|你)?(?:注意一下|注意下|注意点|留意一下|留意下|"
    r"记着点|考虑一下|考虑进去|多注意)[。！!\s]*$"
)
GROUP_MARKER = rx(r"(?i)^(?:以下|以下几点|下面|下面几点|这些|这几点|the following|this|these)?\s*$")


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
    for pattern in (
        _REMEMBER_TAIL_ZH,
        _REMEMBER_TAIL_EN,
        _KEEP_IN_MIND_TAIL_EN,
        _KEEP_IN_MIND_TAIL_ZH,
    ):
        m = pattern.search(s)
        if m and m.start() > 0:
            return _Instruction(True, s[: m.start()].strip(" ,，"), True)
    return _Instruction(False, s, False)


# A request to remember, the sentence's own words: asked, not told "for your information".
# "Remember I'm allergic to peanuts", "could you please remember that I'm vegan",
# "I'd like you to keep in mind that …", "请帮我记住…", "你要记住…".
_ASKS_EN = rx(
    _EN_LEAD + r"(?:(?:can|could|would|will)\s+you\s+(?:please\s+)?|you\s+(?:can|may|should)\s+|"
    r"feel\s+free\s+to\s+|"
    r"i(?:'d| would)\s+like\s+you\s+to\s+|i\s+(?:want|need)\s+you\s+to\s+)?"
    + "(?:"
    + _REMEMBER_VERBS_EN
    + ")"
    # "remember when we…?" recalls; it does not ask
    + r"(?!\s+(?:when|how|what|who|where|why|if|whether)\b)"
    # as _EN_OPENING, but a dash only as a dash: "note-taking helps" asks nothing
    + r"(?:\s+(?:this|that|of this|of that))?(?:\s*[:,]\s*|\s+-\s*|\s+that\s+|\s+|$)"
)
_ASKS_ZH = rx(
    _LEAD_ZH
    + r"(?:我希望你|希望你|你要|你得|你一定要)?(?:请|麻烦|你)*(?:帮我|给我)?(?:"
    + _REMEMBER_VERBS_ZH
    + ")"
    + _ZH_OPENING
)
# "…, please remember that (for recipes)", "…; keep it in mind when you plan meals"
_ASKS_TAIL_EN = rx(
    # one start per run of separators (a search from every blank of a long run is quadratic)
    r"(?i)(?<=[^\s,;\-])[,;\s\-]+(?:so\s+|and\s+|please\s+){0,3}"
    r"(?:(?:remember|note|save|(?:keep|bear)(?=\s+(?:that|this|it)\s+in\s+mind)|"
    r"(?:take|factor)(?=\s+(?:that|this|it)\s+into\s+account))"
    r"\s+(?:that|this|it)(?:\s+in\s+mind|\s+into\s+account)?"
    r"(?:\s+(?:for|when|with|while|in)\s+[^.!?]{0,40})?"
    # "…, so please remember to break long tasks into small steps"
    r"|remember\s+to\s+[^.!?]{1,80})[.!\s]*$"
)
# "…，记下来", "…，你记住就行"
_ASKS_TAIL_ZH = rx(
    r"(?<![,，\s])[,，\s]*(?:请|你)?(?:要)?(?:记住|记好|记下来|记下|记一下)"
    r"(?:了|哦|啊|啦|一下|就行|就好|哈|吧)*[。！!\s]*$"
)


# the request's own question mark or tag: "…, ok?", "…好吗？"
_QUESTION_TAG = rx(
    # one start per run of blanks and commas: two quantifiers over one run, tried from
    # every blank of it, took 19 s on "Remember: a" + 2,000 blanks + "b"
    r"(?i)(?<![,，\s?？])[,，\s]*(?:(?:好吗|可以吗|行吗|好不好|好嘛|ok|okay|please)\s*)?[?？]+\s*$"
)


# Round 20: a request to remember in more words ("Store this in your long-term memory: …",
# "Could you save the fact that …?", "…, commit that to memory", "写进长期笔记：…",
# "…，加到我的档案里", "…先存着"), from closed lists — a verb of keeping, what and where
# to keep it, for how long, a lead-in, politeness — so that the part kept is all content
# ("from now on", "以后" are not among them: a standing rule is content).
_EMOJI = "\u2600-\u27bf\U0001f000-\U0001faff\ufe0f\u200d"
_KEEP_OBJECT_EN = r"(?:this|that|it|these|those|the\s+following|(?:this|the)\s+fact|this\s+one)"
_KEEP_PLACE_EN = (
    r"(?:in|into|to|on|onto|under)\s+(?:your\s+|my\s+|the\s+)?(?:long[\s-]?term\s+|permanent\s+|"
    r"persistent\s+|personal\s+)?(?:memory\s+bank|memory|memories|notes?|records?|profile|file|"
    r"knowledge\s+base)(?:\s+(?:about|on|of)\s+me)?"
)
_KEEP_LONG_EN = (
    r"(?:permanently|forever|for\s+good|for\s+later|for\s+the\s+future|for\s+the\s+long\s+term|"
    r"for\s+(?:future\s+)?reference|long[\s-]?term)"
)
_KEEP_MOD_EN = rf"(?:[\s,]+(?:{_KEEP_PLACE_EN}|{_KEEP_LONG_EN}))"
# verbs that ask on their own ("remember: …") ...
_KEEP_VERB_EN = (
    r"(?:remember(?!\s+(?:when|how|what|who|where|why|if|whether)\b)|memori[sz]e|"
    rf"(?:note|jot|write)(?:\s+{_KEEP_OBJECT_EN})?\s+down|note|"
    rf"(?:keep|bear)(?:\s+{_KEEP_OBJECT_EN})?\s+in\s+mind|commit(?:\s+{_KEEP_OBJECT_EN})?\s+to\s+memory|"
    r"don'?t\s+forget|do\s+not\s+forget|never\s+forget|"
    r"(?:make|take)\s+(?:a\s+)?(?:mental\s+)?note(?:\s+of)?|"
    r"keep\s+(?:a\s+)?(?:permanent\s+)?(?:record|note)(?:\s+of)?)"
)
# ... and verbs that need what or where: "store this: …", "add to my profile: …" ("save
# the file as PDF" asks nothing)
_KEEP_VERB_PLACED_EN = r"(?:save|store|keep|log|record|add|put|file|write|update)"
_KEEP_PHRASE_EN = (
    rf"(?:{_KEEP_VERB_EN}(?:\s+{_KEEP_OBJECT_EN})?{_KEEP_MOD_EN}*"
    rf"|{_KEEP_VERB_PLACED_EN}(?:\s+{_KEEP_OBJECT_EN})?{_KEEP_MOD_EN}+"
    rf"|{_KEEP_VERB_PLACED_EN}\s+{_KEEP_OBJECT_EN}(?=\s*[:\-\u2014\u2013]|\s+that\s))"
)
_REQUEST_LEAD_EN = (
    r"(?:(?:oh\s+)?(?:and\s+)?(?:a\s+)?(?:quick|one\s+more|another|small|last)\s+(?:thing|note)|"
    r"heads\s+up|fyi|for\s+your\s+records?|for\s+the\s+record|for\s+(?:future\s+)?reference|"
    r"note\s+to\s+(?:self|you)|(?:hey|hi|hello)(?:\s+there)?)\s*[:,\-\u2014\u2013!]+\s*"
)
_REQUEST_ASK_EN = (
    r"(?:please\s+|pls\s+|kindly\s+)?(?:(?:can|could|would|will)\s+you\s+(?:please\s+)?|"
    r"i(?:'d|\s+would)\s+like\s+you\s+to\s+|i\s+(?:want|need)\s+you\s+to\s+|"
    r"you\s+(?:should|must|can|may)\s+|feel\s+free\s+to\s+)?"
)
_REQUEST_HEAD_EN = rx(
    rf"(?i)^(?:{_REQUEST_LEAD_EN})*(?:ok(?:ay)?|so|also|and|btw|by\s+the\s+way|oh)?[,\s]*"
    + _REQUEST_ASK_EN
    + _KEEP_PHRASE_EN
    # a dash only as a dash: "note-taking helps" asks nothing
    # after a blank only what the user says of themselves: "Remember I'm vegan", not
    # "Write down your goals …", "Keep forever young is …", "Remember me?"
    + r"(?:,?\s+please)?(?:\s*[:,]\s*|\s+[\-\u2014\u2013]\s*|[\u2014\u2013]\s*|\s+that\s+"
    r"|\s+(?=(?:i|i'm|i've|i'd|i'll|my|we|we're|we've|our)\b))"
)
_REQUEST_TAIL_EN = rx(
    # after a break in the sentence, not after a subject ("… - I'll never forget it!")
    rf"(?i)(?<=[^\s,;\-\u2014\u2013])\s*[,;\-\u2014\u2013][,;\s\-\u2014\u2013]*"
    r"(?:(?:so|and|please|pls|just|ok(?:ay)?)[,\s]+)"
    r"{0,3}(?:(?:can|could|would|will)\s+you\s+(?:please\s+)?)?"
    rf"(?:{_KEEP_VERB_EN}\s+{_KEEP_OBJECT_EN}{_KEEP_MOD_EN}*|{_KEEP_VERB_EN}{_KEEP_MOD_EN}+"
    rf"|{_KEEP_VERB_PLACED_EN}(?:\s+{_KEEP_OBJECT_EN})?{_KEEP_MOD_EN}+"
    # "…, save that"; not "…, keep it", "…, file it", "… - update it"
    r"|(?:save|store|log|record)\s+(?:this|that)"
    # the object inside the verb: "…, commit that to memory", "…, jot it down"
    rf"|(?:(?:note|jot|write)\s+{_KEEP_OBJECT_EN}\s+down|(?:keep|bear)\s+{_KEEP_OBJECT_EN}\s+in\s+mind"
    rf"|commit\s+{_KEEP_OBJECT_EN}\s+to\s+memory){_KEEP_MOD_EN}*)"
    rf"(?:,?\s+(?:please|pls|thanks|thank\s+you|ok(?:ay)?|thx))?[\s.!?{_EMOJI}]*$"
)
_KEEP_PLACE_ZH = (
    r"(?:你的|我的|我)?(?:长期|永久)?(?:记忆库|记忆|笔记本|笔记|备忘录|档案|小本本|本本|资料|个人资料|"
    r"记录)(?:里面|里|中|上)?"
)
_KEEP_LONG_ZH = r"(?:永远|一直|长期|永久|好好|牢牢|务必|千万|一定|先|快|赶紧|要)"
_KEEP_VERB_ZH = (
    r"(?:记住|记一下|记下来|记下|记好|记着|牢记|别忘了|不要忘了|不要忘记|别忘记|备忘一下|备忘|"
    r"记录一下|记录下来)"
)
# kept somewhere: "写进长期笔记", "加到我的档案里", "存长期记忆", "记在小本本上"; "存着", "存一下"
_KEEP_PLACED_ZH = (
    rf"(?:(?:存|保存|存档|写|记|加|添加|放|收|录)(?:到|进|在|入)?{_KEEP_PLACE_ZH}"
    r"|(?:存|保存)(?:一下|下来|下|着|起来)|存档)"
)
_ZH_PARTICLE = r"(?:了|哦|啊|啦|一下|哈|吧|呀|呢|就行|就好)*"
_REQUEST_HEAD_ZH = rx(
    _LEAD_ZH
    + rf"(?:请|麻烦|你|帮忙)*(?:帮我|给我|替我)?{_KEEP_LONG_ZH}*"
    + rf"(?:{_KEEP_VERB_ZH}|{_KEEP_PLACED_ZH}){_ZH_PARTICLE}[:：,，\s]*"
)
_ZH_SEP = rf"[,，。.!！~～\s{_EMOJI}]"
_REQUEST_TAIL_ZH = rx(
    # after a break ("…，先存着", "…！！快记住"); a verb of remembering may also follow the
    # content directly ("…过敏记住了"), though not a subject or an adverb of its ("他说的话我
    # 一直记着" remembers; it does not ask). One start per run of breaks (a search from every
    # break of a long run is quadratic).
    rf"(?:(?<!{_ZH_SEP}){_ZH_SEP}+(?:请|麻烦|你|帮我|给我)*{_KEEP_LONG_ZH}*"
    rf"(?:{_KEEP_VERB_ZH}|{_KEEP_PLACED_ZH})"
    rf"|(?<![我你他她们会都也就还能远直期久好牢必万定先快紧要请烦]|{_ZH_SEP})(?:请|麻烦|帮我|给我)*"
    rf"{_KEEP_VERB_ZH})"
    rf"{_ZH_PARTICLE}[。.!！~～\s{_EMOJI}]*$"
)


@functools.lru_cache(maxsize=4096)
def remembered_part(sentence: str) -> str | None:
    """What the sentence asks the assistant to remember ("记住我对花生过敏" → "我对花生过敏",
    "I'm lactose intolerant - please remember that for recipes" → "I'm lactose intolerant"),
    or None when it asks nothing. "FYI …" tells; it does not ask. Nor does an instruction
    drawn from what is said ("We observe Shabbos, so no meetings Friday night"), which a
    conversation turn's extractor peels as explicit (peel_instruction): consent to keep
    the user's sensitive data asks for it in words."""
    s = sentence.strip()
    m = _REQUEST_HEAD_EN.match(s) or _REQUEST_HEAD_ZH.match(s)
    if m is not None and m.group(0).strip(" ,") and m.end() < len(s):
        part = _QUESTION_TAG.sub("", s[m.end() :]).strip()
        if part:
            return part
    for p in (_REQUEST_TAIL_EN, _REQUEST_TAIL_ZH):
        t = p.search(s)
        if t is not None and t.start() > 0 and s[: t.start()].strip(" ,，"):
            return s[: t.start()].strip(" ,，")
    m = _ASKS_EN.match(s) or _ASKS_ZH.match(s)
    if m is not None:
        return _QUESTION_TAG.sub("", s[m.end() :]).strip()
    for p in (
        _ASKS_TAIL_EN,
        _ASKS_TAIL_ZH,
        _REMEMBER_TAIL_EN,
        _KEEP_IN_MIND_TAIL_ZH,
    ):
        t = p.search(s)
        if t is not None and t.start() > 0:
            return s[: t.start()].strip(" ,，")
    return None


def asks_to_remember(sentence: str) -> bool:
    """The sentence asks the assistant to remember what it says: an explicit instruction,
    said in the user's own words."""
    return remembered_part(sentence) is not None


# "Could you (please) remember that …?": a request put as a question
_POLITE_ASK = rx(
    r"(?i)^(?:ok(?:ay)?|so|also|and|btw|by the way|oh)?[,\s]*(?:please\s+)?"
    r"(?:can|could|would|will)\s+you\b|[?？]\s*$"
)


def is_polite_request(sentence: str) -> bool:
    """A request to remember put as a question: "Could you remember that I'm vegan?"."""
    return asks_to_remember(sentence) and _POLITE_ASK.search(sentence.strip()) is not None
