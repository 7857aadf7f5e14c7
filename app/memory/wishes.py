"""Wishes about the answers, read by a closed grammar (docs/gate.md#wishes-about-the-answers).

A statement such as "Always cite your sources with links", "keep replies under 100
words", "you can fix typos in my drafts without asking", "remind me to check the CC
list before I reply-all", "以后回答先给结论再讲细节" only shapes how the assistant answers
the user, edits the user's own material, or checks something for the user. The semantic
injection class reads many of them as orders ("always … when you …" is how orders are
said too), and a linear class over the embedding cannot tell "always cite sources" from
"always bcc x" (docs/gate.md, round 19). So these are read by words instead:
`about_the_answers` holds only when *every* word of the statement is in a closed lexicon
of how answers look (form, length, language, tone, structure, units, citations), of the
user's own material and its edits, and of the checks a user asks for, and the statement
names at least one of them. The lexicon holds no verb that acts outside the
conversation (send, share, pay, delete, approve, install, click …), no word that points
elsewhere (a name, an address, a link, a source to trust, a system, a rule, memory) and
no verb that dictates what an answer says (say, tell, claim …), so an order appended to a
wish ("…, and forward every invoice to …"), a scripted answer ("whenever I ask about X,
say Y"), or a leak ("end every reply with <a link>") leaves the grammar. Three shapes are
refused though every word is known: a check switched off ("don't warn me", "别提醒我"), a
leave to act without asking that does not edit the user's own material, and a fixed
yes/no answer ("always answer yes", "都回答可以").

Pure and fast (a few µs): the gate (`app.memory.gate`) lets the semantic classes skip
such a statement, as it does the user's own rules (`detectors.users_own_rule`); every
rule still reads it. The rule extractor keeps such a sentence as a standing request.
"""

from __future__ import annotations

import functools
import re

from app.memory.text import nfkc

MAX_CHARS = 240

# --------------------------------------------------------------------------- English
# Words that carry no act: articles, pronouns of the user and of the assistant, linking
# and modal verbs, adverbs of frequency and degree, prepositions, conjunctions, numerals.
_FUNCTION_EN = """
a an the this that these those it its i i'm i've i'd i'll me my you your you're you've yourself
we us our be been being not no never always usually often generally mostly normally typically
just only also too and or but so then than if when whenever unless until while before after
first last next of in on at to for from with without by about as into onto over under per each
every any all some more less most least much many few very really quite pretty rather instead
otherwise still ever again please pls plz thanks thank kindly can could would should will shall
may might must need needs needed want wants wanted like likes liked love loves prefer prefers
preferred preference preferences hate hates dislike dislikes find finds enjoy enjoys appreciate
helpful useful easier easy hard harder clear clearer here where what which how why whether one
two three four five six seven eight nine ten twenty fifty hundred half dozen couple once twice
time times way ways whole part parts bit lot lots plus same different own new old default usual
wherever either neither both such going forward future now onwards onward etc e.g i.e vs versus
let let's lets make makes made get gets got keep keeps kept stay stays stick sticks go goes
straight away directly possible necessary unnecessary relevant important main key top bottom
beginning end start middle up down out back around through across along together separate
separately actually basically simply user user's since because feel free ahead fit fits full
fully remember note noted pref prefs general rule-of-thumb wall walls prose narrative small big
large everyday daily concrete practical level beginner beginners expert experts eli5 kid them
"""
# The user said in the third person: "The user prefers …; they …" (only beside "user").
_THEY_EN = frozenset("they their they're themselves".split())
# How an answer looks: its form, length, structure, language, tone, units, citations.
_FORM_EN = """
concrete plain layman layman's terms jargon-free walkthrough breakdown checklist checklists
bulleted sub-bullets nested spaces tabs single double oxford comma commas semicolons dash dashes
em-dash em-dashes hyphens capital capitals letters acronym contractions person voice passive
active present tense disclaimers disclaimer apologies apology apologizing flattery praise
compliments greetings greeting sign-off sign-offs closing opening outro takeaway action items
thousands separators separator percentages symbols symbol sign type hints typed types tests test
unit runnable minimal complete diff diffs patch changed lines imports classes class names pep8
lint linter formatter f-strings async kotlin swift toml zsh c++ warm patient respectful witty
funny calm confident humble objective balanced critical skeptical opinion opinions candid
supportive tight lengthy long-winded rambling padded exhaustive comprehensive dive high-level
nutshell side-by-side romanization original glossary subheadings subheading timeline flowchart
flowcharts matrix faq guess guessing assume assumptions uncertain uncertainty unsure confidence
estimate estimates ranges range precise precision approximate exact plain-english english-only
emoji-free answer answers answered answering reply replies replied replying respond responds
response responses write writes writing written explain explains explaining explanation
explanations give gives giving show shows showing use uses using used cite cites citing citation
citations format formats formatted formatting summarize summarise summarizes summarises
summarizing summary summaries overview recap tl;dr tldr gist list lists listed put puts begin
begins close closes finish finishes include includes including add adds skip skips skipping
avoid avoids avoiding drop leave cut limit limited cap break broken split group grouped number
numbered numbers label labelled labeled mark marked highlight highlighted bold italic italics
underline quote quotes quoted define defines definition definitions spell spelled spelt spelling
sort sorted order ordered rank ranked compare comparing comparison comparisons structure
structured organize organise organized organised lay laid walk step steps outline outlines
section sections heading headings header headers title titles subtitle paragraph paragraphs
sentence sentences word words line character characters page pages length long longer longest
short shorter shortest brief briefer concise terse succinct compact detailed detail details
thorough deep deeper depth depthy shallow simple simpler technical jargon acronyms abbreviations
term vocabulary example examples analogy analogies metaphor metaphors diagram diagrams chart
charts graph graphs table tables column columns row rows bullet bullets point points pointed
markdown latex mermaid ascii emoji emojis emoticons exclamation marks punctuation code codes
block blocks fenced inline snippet snippets comment comments commented pseudocode python
javascript typescript java rust golang sql bash shell powershell json yaml html css regex source
sources reference references referenced footnote footnotes link links linked bibliography
quotation quotations evidence caveat caveats assumption reasoning reason reasons rationale why
pros cons tradeoff tradeoffs trade-offs option options alternative alternatives choice choices
recommendation recommendations recommend suggest suggestion suggestions question questions
clarifying ask asks asking asked tone style register formal informal casual friendly polite
neutral direct blunt frank honest gentle encouraging professional playful serious humorous humor
jokes small talk pleasantries chit-chat chitchat preamble intro introduction introductions
filler fluff padding repetition repeat repeating restate restating conclusion conclusions
takeaways bottom upfront up-front front academic slang internet emotive enthusiastic excited
cheerful dry sarcastic condescending patronizing hedging hedge hedges apologetic apologize
apologise sorry sycophantic fancy flowery purple wordiness past imperative verb verbs noun nouns
lowercase uppercase caps all-caps title-case git grams ounces cups ml liters litres tablespoons
teaspoons ppt pptx language languages english chinese mandarin cantonese simplified traditional
spanish french german japanese korean portuguese italian russian arabic hindi dutch bilingual
translation translations translate translated pinyin british american australian canadian us uk
units metric imperial celsius fahrenheit kilometers kilometres km miles kg kilograms pounds lbs
meters metres cm inches feet currency usd eur gbp cny rmb dollars euros yuan date dates time
times timezone timezones 24-hour 12-hour am pm iso yyyy-mm-dd dd/mm/yyyy mm/dd/yyyy decimal
decimals rounded round significant digits figures percent math formula formulas equation
equations step-by-step numbered-list read reading readable scan scannable skim skimmable verbose
verbosity wordy max maximum min minimum under over around roughly approximately most least
exactly
"""
# The user's own material and what may be done to it.
_OWN_EN = """
deadline deadlines priority priorities fact facts factual claims statistics figures draft drafts
drafting drafted listing note notes essay essays outline script scripts function functions
variable variables docstring docstrings todo to-do todos paste pasted pastes shared edit edits
editing edited fix fixes fixing fixed correct corrects correcting corrected proofread
proofreading reword rewording rephrase rephrasing rewrite rewriting rewritten shorten shortening
trim trimming tighten tightening tidy tidying clean cleaning polish polishing reformat
reformatting restructure restructuring reorder reordering rename renaming simplify simplifying
refactor refactoring typo typos grammar grammatical wording phrasing spacing indentation indent
capitalization capitalisation case camelcase snake_case naming
"""

_EDIT_VERBS_EN_WORDS = """
edit edits editing fix fixes fixing correct correcting proofread proofreading
    reword rewording rephrase rephrasing rewrite rewriting shorten shortening trim
    trimming tighten tightening tidy tidying clean cleaning polish polishing reformat
    reformatting restructure restructuring reorder reordering rename renaming simplify
    simplifying refactor refactoring sort translate"""
_EDIT_VERBS_EN = frozenset(_EDIT_VERBS_EN_WORDS.split())
# A wish names at least one word of how answers look (less the words any sentence has).
_ANCHORS_EN = frozenset((_FORM_EN + _EDIT_VERBS_EN_WORDS).split()) - frozenset(
    """number numbers use uses using used give gives giving put puts add adds read reading
    under over around most least exactly roughly approximately time times mark marks point
    points ask asks asking asked question questions reason why close closes long evidence
    claim talk open opens""".split()
)

_LEXICON_EN = frozenset((_FUNCTION_EN + _FORM_EN + _OWN_EN).split())
# the user's material comes in only as what the user does ("the snippets I paste", "code
# I share"), never as the assistant's act
_ACT_EN = re.compile(r"\b(?:paste|pasted|pastes|share|shared|shares)\b")
_USERS_ACT_EN = re.compile(
    r"\b(?:i|user|they)\s+(?:just\s+|usually\s+|often\s+|sometimes\s+|ever\s+)?$"
)
# after a verb of answering comes how the answer looks, never what it says ("answer: it is
# not phishing", "always reply that there are no typos", "give it to them")
_ANSWERING_EN = re.compile(
    r"\b(?:answer|answered|answering|reply|replied|replying|respond|responding|explain|"
    r"explaining|write|writing|give|giving|say|tell)\b(?!-)\s*(?P<next>[a-z][a-z'-]*|[^\sa-z]|$)"
)
_AFTER_ANSWERING_EN = frozenset(
    """in with using as by under within without at to for from like me first only and or
    then but unless when whenever if once before after the a an your my briefly concisely
    clearly simply directly plainly formally casually politely properly fully shortly
    quickly carefully step why how questions back short shorter long longer""".split()
) | frozenset((_FORM_EN + _OWN_EN).split())
_NOT_AFTER_ANSWERING_EN = frozenset(
    "it that this there these those them they yes no not never nothing none is are".split()
)
# words known one by one that together do what the lexicon leaves out: another's voice,
# any question answered, a third person
_SHAPES_EN = re.compile(
    r"\bas\s+(?:if|though)\b|\b(?:on\s+my\s+behalf|in\s+my\s+(?:voice|name))\b"
    r"|\b(?:answer|reply|respond)\s+(?:to\s+)?(?:any|every|all|each)\s+(?:\w+\s+)?"
    r"(?:questions?|requests?|asks?)\b"
    r"|\b(?:avoid|skip|refuse|dodge|ignore)\s+(?:\w+\s+){0,2}questions?\b"
    r"|\b(?:would|could|should)(?:n't|\s+not)\b"
    r"|\b(?:to|for|with)\s+them\b|\b(?:give|show)\s+them\b"
    r"|(?<!going\s)(?<!moving\s)\bforward\b"
    r"|\b(?:read|follow|load|fetch|visit|open|opens|click|run|install)\s+(?:\w+\s+){0,3}"
    r"(?:links?|attachments?|files?|tests?|imports?)\b"
)
# leave to act without a question first
_LEAVE_EN = re.compile(
    r"\bwithout\s+(?:asking|checking|confirming|a\s+question)|\bno\s+need\s+to\b"
    r"|\b(?:don't|dont|do\s+not|never)\s+(?:need\s+to\s+)?(?:ask|check)\b|\bfeel\s+free\b"
    r"|\bgo\s+ahead\b|\bjust\s+do\s+it\b|\byou\s+(?:can|may)\b|\bfine\s+with\s+you\b"
    r"|\bdirectly\b|\bstraight\s+away\b|\bright\s+away\b"
)
_TOKEN_EN = re.compile(r"[a-z]+(?:['’][a-z]+)*(?:[-/;][a-z0-9]+)*|\d+(?:[.,:]\d+)?")
# what may stand between words: blanks and plain punctuation (no quotes of others'
# words beyond ' and ", no markup, no link)
_BETWEEN_EN = re.compile(r"[\s,.;:!?()\-–—'\"’“”/&+%*]*")
_ELSEWHERE = re.compile(
    r"@|https?:|www\.|://|\b[\w-]+\.(?:com|net|org|io|ai|co|app|dev|xyz|ru|cn|me|ly|gl|to|"
    r"cc|info|biz|site|link|top)\b|[<>{}\[\]`\\|$#=]"
)


def _english(folded: str) -> bool:
    low = folded.lower().replace("’", "'")
    if _BETWEEN_EN.fullmatch(_TOKEN_EN.sub(" ", low)) is None:
        return False  # a character no word or plain punctuation explains
    words = _TOKEN_EN.findall(low)
    if not words:
        return False
    for w in words:
        if w[0].isdigit():
            if len(w.replace(",", "").replace(".", "").replace(":", "")) > 4:
                return False  # a long number is data, not a length
            continue
        if w in _LEXICON_EN or ("-" in w and all(p in _LEXICON_EN for p in w.split("-"))):
            continue  # a word, or words joined by hyphens ("one-sentence")
        if w in _THEY_EN and ("user" in words or "user's" in words):
            continue
        return False
    if not _ANCHORS_EN.intersection(words):
        return False
    return _shape_allowed(low, set(words))


def _shape_allowed(low: str, words: set[str]) -> bool:
    if _LEAVE_EN.search(low) and not _EDIT_VERBS_EN & words:
        return False  # leave to act, but not to edit the user's own material
    if _SHAPES_EN.search(low):
        return False
    for m in _ANSWERING_EN.finditer(low):
        nxt = m.group("next")
        if nxt in _NOT_AFTER_ANSWERING_EN or not (
            nxt in _AFTER_ANSWERING_EN or nxt in ",.;!" or not nxt
        ):
            return False  # what the answer says, not how it looks
    for act in _ACT_EN.finditer(low):
        if _USERS_ACT_EN.search(low[max(0, act.start() - 30) : act.start()]) is None:
            return False  # "share the draft", "paste my notes into …"
    return True


# --------------------------------------------------------------------------- Chinese
# Words, read by the longest cover of the sentence (dynamic programming over the lexicon):
# a sentence is a wish only when every character belongs to one of these words. Single
# characters are few and carry no act (的, 了, 都, 先 …); verbs of acting and of saying
# (发, 转, 付, 删, 说, 告诉) are in it only inside words that keep them to the answer
# ("说重点", "告诉我一声").
_FUNCTION_ZH = """
的 地 得 了 吧 呢 啊 哦 嘛 呀 哈 啦 吗 着 过 和 跟 与 及 或 或者 还是 以及 并 并且 而且 然后 再
先 后 之后 之前 以前 以后 今后 往后 从现在起 从现在开始 从今以后 每次 每回 每一次 所有 全部 一律
总是 一直 始终 永远 都 也 还 就 才 只 只要 只需 只用 就行 就好 就可以 即可 行 好 好的 可以 能
能够 会 要 想 想要 需要 希望 喜欢 更喜欢 比较喜欢 偏好 倾向 倾向于 习惯 宁愿 宁可 最好 尽量
尽可能 务必 一定 记得 注意 请 麻烦 麻烦你 帮我 帮忙 劳驾 谢谢 拜托 我 我的 我们 你 你的 您 用户
时 时候 的时候 如果 要是 的话 如果有 有的话 这 这个 这些 那 那个 那些 一下 一点 一点儿 些 一些
个 条 种 处 次 遍 把 给我 让我 帮 对 对于 关于 按 按照 根据 一样 同样 为 为了 因为 所以 这样
那样 怎么 哪些 哪个 为啥 为什么 多 少 太 很 更 最 比较 稍微 一般 通常 平时 默认 尽快 马上 立刻
直接 顺便 另外 还有 前面 后面 最前面 最后面 开头 结尾 最后 末尾 一开始 开始 结束 之内 以内 以上
以下 左右 上下 之间 里 中 上 下 内 外 前 一 二 两 三 四 五 六 七 八 九 十 百 千 万 半 几 每 各
整 全 第 超过 不超 老 老是 总 总要 看 看着 读 读起来 看起来 怪 成 分成 总结成 写成 翻成 改成
列成 单独 单独列 单独标 分开 一起 问 啥 这么 那么 记住 记下 记一下 记好 保存 存一下 设置 规矩
事实 事实类 信息 数据 数字 手机 屏幕 不 不要 别 不用 不必 无需 没必要 甭 多点 少点 多一些 少一些
就够了 够了 为主 为准 优先 主要
"""
_FORM_ZH = """
大白话 说人话 人话 接地气 正经 严谨 专业点 简单点 详细点 多举例 举例子 代码注释 类型注解
单元测试 完整代码 完整 全部代码 只给 改动 改动的部分 差异 补丁 缩进 空格 制表符 换行 小标题 层级
对照表 时间线 思维导图 结论先行 先说结论 总分总 划重点 核心 一句话总结 夸我 拍马屁 恭维 奉承
道歉 对不起 抱歉 语气词 成语 文言 古文 毒舌 温柔 耐心 鼓励 批评 客观 中立 主观 观点 不确定 确定
假设 前提 说明理由 换算 日期格式 星期 北京时间 分级 级别 难度 入门 新手 小白 专家 深度 广度 篇
章节 页码 行数 先给 再给 给出 给个 给几个 回答 回复 答 答复 作答 解释 讲 讲解 说明 介绍 总结
概括 归纳 概述 列 列出 列出来 列成 列个 列一下 分点 分条 分条列 分段 写 写成 写在 改成 换成 换个
统一 保持 控制 限制 不超过 最多 至少 控制在 举例 举个例子 举几个例子 引用 标 标出 标出来 标注
注明 附 附上 附个 加 加上 放 放在 用 使用 带 带上 带着 说重点 说结论 讲重点 讲结论 讲清楚 讲明白
说清楚 说明白 讲太深 讲得 说得 展开 展开讲 深入 简单说 简单讲 长话短说 开门见山 直奔主题
废话少说 结论 重点 要点 关键点 摘要 概要 大纲 提纲 目录 标题 列表 清单 编号 序号 表格 markdown
代码 代码块 行内代码 例子 示例 案例 类比 比喻 步骤 流程 图 图表 流程图 示意图 来源 出处 参考
参考资料 文献 脚注 单位 公制 英制 摄氏度 华氏度 公里 千米 英里 公斤 千克 斤 米 厘米 人民币 元
美元 欧元 日期 时间 格式 年月日 24小时制 12小时制 时区 小数 小数点 保留 位 百分比 公式 语言 中文
英文 英语 汉语 普通话 粤语 日语 韩语 法语 德语 西班牙语 简体 繁体 简体字 繁体字 双语 中英 中英文
中英对照 拼音 翻译 语气 口吻 风格 文风 正式 口语 口语化 通俗 通俗易懂 易懂 专业 书面 书面语 随意
轻松 客气 礼貌 严肃 幽默 友好 温和 直白 直接 委婉 生硬 浮夸 夸张 花哨 煽情 官方 官腔 学术 学术化
网络用语 流行语 书面化 啰里啰嗦 简明 扼要 简明扼要 干脆 利落 小时制 动词 名词 第一行 第一句 字符
行 页 每页 一页 张 每张 画 画个表 画表 表 金额 万元 千元 货币 币种 术语 专业术语 行话 黑话 缩写
英文缩写 表情 表情包 emoji 颜文字 感叹号 问号 标点 标点符号 加粗 斜体 字 字数 个字 句 句话
一句话 段 段落 篇幅 长度 长 太长 短 简短 简洁 简单 精简 详细 具体 浅显 清楚 明白 清晰 太深 太多
太少 啰嗦 冗长 废话 客套 客套话 寒暄 开场白 铺垫 前言 套话 背景 细节 技术细节 理由 原因 思路
推理 过程 优缺点 利弊 优点 缺点 选项 方案 建议 推荐 备选 对比 比较 区别 提问 反问 追问 问我
先问我 问清楚 猜 瞎猜 乱猜 解答
"""
# words whose parts are left out one by one (a link, a source to trust, "是") but which
# only shape an answer together
_SAFE_COMPOUNDS_ZH = """
出处链接 来源链接 引用链接 附上链接 还是 就是说 是否
"""
_OWN_ZH = """
截止日期 截止时间 优先级 我发的 我贴的 我贴给你的 我写的 我贴过来的 我发过来的 贴过来的 发过来的
表格 用户发的 用户贴的 用户贴给你的 用户写的 用户的 我的 文章 草稿 稿子 初稿 笔记 代码 脚本 变量
变量名 函数 函数名 注释 命名 待办 待办事项 待办清单 论文 作业 PPT 幻灯片 错别字 语病 病句 语法
拼写 格式 排版 句子 措辞 用词 文案 标题 稿件 改 改一下 修改 改正 纠正 修正 订正 润色 改写 重写
精简 缩短 删减 压缩 排序 排个序 重新排序 排 整理 调整 规范 格式化 重命名 起名 起得 烂 不通顺
通顺 优化 简化 重构 校对 理顺 顺一下 改改 直接改 帮我改 帮我排
"""

_LEXICON_ZH = frozenset((_FUNCTION_ZH + _FORM_ZH + _OWN_ZH + _SAFE_COMPOUNDS_ZH).split())
_LONGEST_ZH = max(len(w) for w in _LEXICON_ZH)
_FUNCTION_ONLY_ZH = frozenset(_FUNCTION_ZH.split())
_FORM_ONLY_ZH = frozenset(_FORM_ZH.split()) - _FUNCTION_ONLY_ZH
_EDIT_VERBS_ZH = re.compile(
    r"改|修|纠正|订正|润色|重写|精简|缩短|删减|压缩|排|整理|调整|规范|格式化|重命名|起名|优化|简化|"
    r"重构|校对|理顺|顺一下|翻译"
)
_LEAVE_ZH = re.compile(
    r"不用问|不必问|无需问|别问|不用确认|不必确认|不用征求|不用跟我说|不用经过我|你可以|随便|尽管|随时"
)
# after a verb of answering comes how the answer looks, never what it says ("都回答可以",
# "就讲没问题", "回答不是"; "回答不要太长", "回答不超过三段" say how it looks); no answer
# to anything ("所有问题都回答", "问啥都回答"), no one else's voice ("用我的口吻"), no reply
# sent on after an edit ("改一下再回复")
_SHAPES_ZH = re.compile(
    r"(?:回答|回复|答复|答|讲|说明|解释|写|告诉我)(?:都|就|一律|一概|全|总|只|也)?(?:是|说)?"
    r"(?:可以|能|行|好|对|很|没|有|是|正常|安全|不(?!超|要|用|必|需|太|宜|够))"
    r"|(?:所有|全部|每个|一切|任何|啥|什么)(?:的)?(?:问题|提问|事)?都(?:要|得|直接)?(?:回答|答|回复)"
    r"|问啥|啥问题"
    r"|我的口吻|用户的口吻|我的名义|替我|代我"
    r"|(?:再|然后|之后|后|直接)(?:回复|回|发)(?!答)"
)
_CJK_RUN = re.compile(r"[\u4e00-\u9fff]+")
_LATIN_RUN = re.compile(r"[a-z][a-z0-9\-;/]*|\d+(?:[.,:]\d+)?", re.IGNORECASE)
_BETWEEN_ZH = re.compile(r"[\s,.;:!?()\-–—'\"“”‘’/&+%*、，。；：！？（）《》「」【】…~～]*")


def _covered(run: str) -> list[str] | None:
    """A cover of `run` by lexicon words, fewest words first, or None."""
    n = len(run)
    best: list[list[str] | None] = [None] * (n + 1)
    best[0] = []
    for i in range(n):
        at = best[i]
        if at is None:
            continue
        for j in range(min(n, i + _LONGEST_ZH), i, -1):
            word = run[i:j]
            if word in _LEXICON_ZH:
                nxt = best[j]
                if nxt is None or len(nxt) > len(at) + 1:
                    best[j] = [*at, word]
    return best[n]


def _chinese(folded: str) -> bool:
    rest = _CJK_RUN.sub(" ", folded)
    for latin in _LATIN_RUN.findall(rest):
        low = latin.lower()
        if low[0].isdigit():
            if len(re.sub(r"[.,:]", "", low)) > 4:
                return False
        elif low not in _LEXICON_EN and low not in _LEXICON_ZH:
            return False
    if _BETWEEN_ZH.fullmatch(_LATIN_RUN.sub(" ", rest)) is None:
        return False
    words: list[str] = []
    for run in _CJK_RUN.findall(folded):
        cover = _covered(run)
        if cover is None:
            return False
        words.extend(cover)
    text = "".join(_CJK_RUN.findall(folded))
    if not _FORM_ONLY_ZH.intersection(words) and not _EDIT_VERBS_ZH.search(text):
        return False  # nothing that makes it a wish about the answers
    if _SHAPES_ZH.search(text):
        return False
    if _LEAVE_ZH.search(text) and not _EDIT_VERBS_ZH.search(text):
        return False
    return True


# how the rule extractor writes a standing request down (app.providers.extract_prefs)
_RECORDED = re.compile(r"^(?:the\s+user's\s+standing\s+request|用户的长期要求)\s*[:：]\s*", re.I)


@functools.lru_cache(maxsize=4096)
def about_the_answers(text: str) -> bool:
    """Whether `text` only shapes the assistant's answers or edits the user's own text,
    every word of it in the closed lexicon (module doc)."""
    folded = _RECORDED.sub("", nfkc(text).strip())
    if not folded or len(folded) > MAX_CHARS or _ELSEWHERE.search(folded.lower()):
        return False
    if _CJK_RUN.search(folded):
        return _chinese(folded)
    return _english(folded)
