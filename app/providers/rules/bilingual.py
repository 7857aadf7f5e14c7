"""The matchers that read either language (carriers, tech stacks), and the format hit the
Chinese and English format matchers share."""

from __future__ import annotations

import re

from app.memory.model import FactType
from app.memory.prefilter import rx
from app.memory.text import detect_lang
from app.providers.rules.hits import CONF_IMPLIED, CONF_PLAIN, Hit
from app.providers.rules.text import negated_before
from app.providers.rules.vocabulary import (
    CARRIER_RES,
    DELIVERY_CUE_EN,
    DELIVERY_CUE_ZH,
    FORMAT_LABEL,
    TECH_STOP,
    may_name_carrier,
)

_FORMAT_CUE_ZH = rx(r"用|以|喜欢|偏好|习惯|倾向|输出|回复|回答|格式|展示|呈现|整理|做成|给我|列|要")
_FORMAT_CUE_EN = rx(
    r"(?i)\b(?:prefer|like|love|want|use|format|reply|respond|answer|output|give me|show|"
    r"present|put|write|in|as)\b"
)


def format_hit(s: str, table: tuple[tuple[re.Pattern[str], str], ...], zh: bool) -> list[Hit]:
    if not (_FORMAT_CUE_ZH if zh else _FORMAT_CUE_EN).search(s):
        return []
    for pattern, value in table:
        m = pattern.search(s)
        if m:
            if negated_before(s, m.start()):
                return []
            zh_label, en_label = FORMAT_LABEL[value]
            statement = (
                f"用户偏好以{zh_label}形式输出" if zh else f"The user prefers output as {en_label}"
            )
            conf = CONF_PLAIN if re.search(r"(?i)我|\bi\b|\bmy\b", s) else CONF_IMPLIED
            return [Hit(FactType.PROFILE, "preferred_output_format", value, statement, conf)]
    return []


def carrier(s: str) -> list[Hit]:
    if not may_name_carrier(s):
        return []
    zh = detect_lang(s) == "zh"
    for pattern, value in CARRIER_RES:
        m = pattern.search(s)
        if not m:
            continue
        if negated_before(s, m.start()):
            return []
        if zh:
            ambiguous = value == "JD Logistics"
            if not (DELIVERY_CUE_ZH.search(s) or (not ambiguous and re.search(r"用|选", s))):
                return []
            surface = m.group(0)
            name = (
                surface
                if surface.endswith(("快递", "物流", "速运"))
                or not re.match(r"[\u4e00-\u9fff]", surface)
                else surface + "快递"
            )
            return [Hit(FactType.PROFILE, "delivery_carrier", value, f"用户偏好使用{name}")]
        if not DELIVERY_CUE_EN.search(s) or not re.search(
            r"(?i)\b(?:i|my|we|our)\b|^(?:please\s+)?(?:ship|send|use|deliver|"
            r"(?:keep|continue|go on)\s+(?:using|shipping|sending)|stick with|always use)",
            s,
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
    rx(
        r"(?P<who>我们团队|我们组|我们公司|我们项目|我们部门|我们小组|我们这边|我们|团队|公司|项目|"
        r"组里|咱们|我这边|我)(?:的)?"
        r"(?:(?:服务|系统|后端|前端|项目|代码|应用|网站|产品|数据库|集群|团队|文档|线上|线下|生产环境|生产|"
        r"本地|测试环境|服务器上?|笔记|文件|照片|(?:工作|家里|个人|公司)?(?:电脑|笔记本|台式机|手机|主机))"
        r"(?:都|也|上)?)?"
        # habit and preference words before the verb: "我习惯用 Vim", "我一般用 Go"
        r"(?:都|一直|主要|现在|目前|正在|平时|日常|在|也|还|基本|习惯|喜欢|更喜欢|偏好|爱|一般|"
        r"通常|总是|经常|常|只|还是|更)*"
        # "我用的是 Windows 11", "我们线上跑的是 PostgreSQL 16"
        r"(?:(?:用|使用|采用|跑|装)的是|用|使用|采用|基于|跑在|写|(?:都)?(?:放在|存在|记在))\s*"
        r"(?P<x>" + _TECH_LIST + r")"
    ),
    rx(
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
    r"(?:[A-Z0-9][\w+#.\-]*|(?i:" + _TECH_LOWER + r")\b)"
    r"(?:\s+(?:[A-Z][\w+#.\-]*|v?\d+(?:\.\d+)*))*"
)
_TECH_EN_LIST = _TECH_EN_ITEM + r"(?:\s*(?:,|&|\+|/|(?i:and|with|plus))\s*" + _TECH_EN_ITEM + r")*"
_TECH_EN = (
    rx(
        r"(?P<who>(?i:\bwe|\bour\s+(?:team|company|startup|project|org|shop|group|lab|backend|"
        r"frontend|services?|app|product)|\bmy\s+(?:team|company|org|startup|group|lab)|"
        r"\bmy(?=\s+(?:work\s+|home\s+|personal\s+|main\s+|old\s+|new\s+)?(?:laptop|computer|pc|"
        r"machine|desktop|server|phone|workstation|mac)\b)|\bi))"
        r"(?i:\s+(?:work\s+|home\s+|personal\s+|main\s+|old\s+|new\s+)?(?:laptop|computer|pc|"
        r"machine|desktop|server|phone|workstation|mac)\b)?"
        r"(?:\s+|(?='))"
        r"(?i:(?:(?:mostly|mainly|primarily|currently|now|still|all|also|only|usually|heavily|always|"
        r"generally|normally|typically)\s+)*"
        r"(?:use|uses|'re using|are using|am using|'m using|is using|are running|'re running|"
        r"(?:runs?|hosts?)(?:\s+(?:everything|it all|all\s+(?:of\s+)?(?:our\s+)?\w+|"
        r"our\s+\w+))?\s+(?:on|in|with)|deploys?(?:\s+(?:everything|it all|all\s+(?:of\s+)?"
        r"(?:our\s+)?\w+|our\s+\w+))?\s+(?:on|to|with|using|via)|runs?|"
        r"(?:builds?|ships?|tests?|provisions?|deploys?|manages?) (?:with|on|in|using|via)|"
        r"works? (?:with|in)|"
        r"develops? (?:with|in)|codes? in|writes?|relies on|rely on|are on|'re on|'m on|am on|"
        r"is on|standardi[sz]ed on|(?:'ve|have)\s+been\s+using|"
        # "we migrated to Postgres"; not "moved to", which is where people live ("I moved
        # to Hangzhou" is a home, never a tool)
        r"(?:'ve\s+|have\s+)?(?:switched|migrated)\s+to))\s+(?P<x>" + _TECH_EN_LIST + r")"
    ),
    rx(
        r"(?P<who>(?i:\bour|\bmy))\s+(?i:(?:tech\s+)?(?:main\s+|primary\s+|daily\s+)?(?:stack|backend|"
        r"frontend|database|db|infra|infrastructure|language|editor|ide|os|ci|ci/cd|cd|pipeline|"
        r"cloud|cloud provider|hosting|shell|terminal|browser|orm|framework|runtime|"
        r"package manager|build tool|laptop|machine|computer|phone|desktop|server|cluster|"
        r"data warehouse|warehouse|message broker|queue|cache|monitoring|issue tracker)"
        r"(?:\s+of choice)?)(?:\s+(?i:is|are|runs(?:\s+on)?|uses)|\s*'s)\s+(?i:(?:a|an)\s+)?(?P<x>"
        + _TECH_EN_LIST
        + r")"
    ),
    # a task done in a named tool: "I edit photos in Darktable", "I do all my budgeting in
    # YNAB", "I shoot on a Fujifilm X-T3" (the tool has a letter: no account number)
    rx(
        r"(?P<who>(?i:\bi))\s+(?i:(?:mostly|mainly|usually|always|now|still|only)\s+)?"
        r"(?i:edit|do|keep|write|track|take|manage|draw|design|shoot|record|plan|organi[sz]e|"
        r"budget|journal|code|program|compose|mix|render|sketch|draft|read|listen\s+to|watch)\s+"
        r"(?i:(?:all|most|everything|some)\s+)?(?i:(?:of\s+)?(?:my|the|our)\s+)?"
        r"(?i:[a-z]+\s+){0,2}?(?i:in|with|on|using)\s+(?i:(?:a|an|the)\s+)?"
        r"(?P<x>(?=\S*[A-Za-z])" + _TECH_EN_ITEM + r")"
    ),
    # "our app is written in Go", "my site is built with Astro"
    rx(
        r"(?P<who>(?i:\bour|\bmy))\s+(?i:(?:app|apps|service|services|backend|frontend|site|"
        r"website|api|product|codebase|project|bot)\s+(?:is|are)\s+(?:written|built|developed|"
        r"implemented|hosted|deployed)\s+(?:in|with|on))\s+(?P<x>" + _TECH_EN_LIST + r")"
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
        if part and part.lower() not in TECH_STOP and part.split()[0].lower() not in TECH_STOP:
            items.append(part)
    return items


def tech(s: str) -> list[Hit]:
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
