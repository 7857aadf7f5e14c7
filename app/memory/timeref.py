"""Time spans named in a query ("last week", "上个月", "3 days ago"), resolved against `now`.

Recall uses the span as a signal: an episode whose `occurred_at` falls inside it is
evidence for the query (app.memory.scoring TEMPORAL). Pure: `now` is a parameter.
Spans are half-open [start, end) in `now`'s time zone (UTC when it has none); weeks start
on Monday. Only the first expression found counts.
"""

from __future__ import annotations

import functools
import re
from datetime import UTC, datetime, timedelta

from app.memory.prefilter import fold

Span = tuple[datetime, datetime]

_MONTH_NAMES = (
    "january february march april may june july august september october november december"
)
_MONTHS = {name: i + 1 for i, name in enumerate(_MONTH_NAMES.split())}
_MONTHS.update({name[:3]: n for name, n in list(_MONTHS.items())})
_ZH_DIGITS = {
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
    "十": 10,
    "十一": 11,
    "十二": 12,
}
_UNIT = {
    "day": "day",
    "days": "day",
    "week": "week",
    "weeks": "week",
    "month": "month",
    "months": "month",
    "year": "year",
    "years": "year",
    "天": "day",
    "日": "day",
    "周": "week",
    "星期": "week",
    "个星期": "week",
    "礼拜": "week",
    "个礼拜": "week",
    "个月": "month",
    "月": "month",
    "年": "year",
}

_EN = re.compile(
    r"\b(?P<word>yesterday|today|tonight|last\s+night|the\s+day\s+before\s+yesterday"
    r"|(?P<which>last|this|past|previous)\s+(?P<period>week(?:end)?|month|year)"
    r"|(?P<n>\d{1,3}|a|an|one|two|three|four|five|six|seven|eight|nine|ten)\s+"
    r"(?P<unit>days?|weeks?|months?|years?)\s+ago"
    r"|in\s+(?P<month>january|february|march|april|may|june|july|august|september|october"
    r"|november|december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)\b(?!\s+\d{1,2}\b))",
    re.IGNORECASE,
)
_ZH = re.compile(
    r"(?P<word>前天|昨天|昨晚|今天|今晚|上周末|上个?周末|上周|上个?星期|上个?礼拜|这周|本周|这个?星期"
    r"|上个月|这个月|本月|去年|今年|前年)"
    r"|(?P<n>\d{1,3}|[一二两三四五六七八九十]{1,3})\s*(?P<unit>天|个星期|星期|个礼拜|礼拜|周|个月|年)[之以]?前"
    r"|(?P<month>\d{1,2}|十[一二]?|[一二三四五六七八九])月份?(?![\d一二三四五六七八九十]*[日号])"
)
_MONTH_NAMES = (
    r"january|february|march|april|may|june|july|august|september|october|november"
    r"|december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
# Absolute dates: "9 November, 2022", "November 9, 2022", "on 13 Oct 2023", "July 2022",
# "2022-11-09", "2022年11月9日", "2022年5月", "in 2022".
_ABSOLUTE = re.compile(
    rf"\b(?P<d1>\d{{1,2}})(?:st|nd|rd|th)?\s+(?P<m1>{_MONTH_NAMES})\.?,?\s+(?P<y1>\d{{4}})\b"
    rf"|\b(?P<m2>{_MONTH_NAMES})\.?\s+(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<y2>\d{{4}})\b"
    rf"|\b(?P<m3>{_MONTH_NAMES})\.?,?\s+(?:of\s+)?(?P<y3>\d{{4}})\b"
    r"|\b(?P<y4>\d{4})-(?P<m4>\d{1,2})-(?P<d4>\d{1,2})\b"
    r"|(?P<y5>\d{4})\s*年\s*(?P<m5>\d{1,2})\s*月(?:\s*(?P<d5>\d{1,2})\s*[日号])?"
    r"|\b(?:in|during|of)\s+(?P<y6>(?:19|20)\d{2})\b|(?P<y7>(?:19|20)\d{2})\s*年(?!\s*\d)",
    re.IGNORECASE,
)
_EN_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
}


def _day(now: datetime) -> datetime:
    return now.replace(hour=0, minute=0, second=0, microsecond=0)


def _month_start(year: int, month: int, tz: object) -> datetime:
    while month < 1:
        month, year = month + 12, year - 1
    while month > 12:
        month, year = month - 12, year + 1
    return datetime(year, month, 1, tzinfo=tz)  # type: ignore[arg-type]


def _week(now: datetime, back: int) -> Span:
    monday = _day(now) - timedelta(days=now.weekday()) - timedelta(weeks=back)
    return monday, monday + timedelta(weeks=1)


def _weekend(now: datetime) -> Span:
    saturday = _day(now) - timedelta(days=now.weekday()) - timedelta(days=2)
    return saturday, saturday + timedelta(days=2)


def _month(now: datetime, back: int) -> Span:
    start = _month_start(now.year, now.month - back, now.tzinfo)
    return start, _month_start(start.year, start.month + 1, now.tzinfo)


def _year(now: datetime, back: int) -> Span:
    start = datetime(now.year - back, 1, 1, tzinfo=now.tzinfo)
    return start, datetime(now.year - back + 1, 1, 1, tzinfo=now.tzinfo)


def _ago(now: datetime, n: int, unit: str) -> Span:
    """ "3 days ago" is that day; "2 weeks ago" that week; "2 months ago" that month."""
    if unit == "day":
        day = _day(now) - timedelta(days=n)
        return day, day + timedelta(days=1)
    if unit == "week":
        return _week(now, n)
    if unit == "month":
        return _month(now, n)
    return _year(now, n)


def _named_month(now: datetime, month: int) -> Span:
    """The most recent such month that has begun ("in May" asked in March is last May)."""
    year = now.year if month <= now.month else now.year - 1
    start = _month_start(year, month, now.tzinfo)
    return start, _month_start(year, month + 1, now.tzinfo)


_WORDS: dict[str, tuple[str, int]] = {
    "today": ("day", 0),
    "tonight": ("day", 0),
    "yesterday": ("day", 1),
    "last night": ("day", 1),
    "the day before yesterday": ("day", 2),
    "今天": ("day", 0),
    "今晚": ("day", 0),
    "昨天": ("day", 1),
    "昨晚": ("day", 1),
    "前天": ("day", 2),
    "上周": ("week", 1),
    "上星期": ("week", 1),
    "上个星期": ("week", 1),
    "上礼拜": ("week", 1),
    "上个礼拜": ("week", 1),
    "这周": ("week", 0),
    "本周": ("week", 0),
    "这星期": ("week", 0),
    "这个星期": ("week", 0),
    "上个月": ("month", 1),
    "这个月": ("month", 0),
    "本月": ("month", 0),
    "去年": ("year", 1),
    "今年": ("year", 0),
    "前年": ("year", 2),
}


def _zh_number(text: str) -> int | None:
    if text.isdigit():
        return int(text)
    if text in _ZH_DIGITS:
        return _ZH_DIGITS[text]
    if len(text) == 2 and text[1] == "十" and text[0] in _ZH_DIGITS:
        return _ZH_DIGITS[text[0]] * 10
    if len(text) >= 2 and text[0] == "十" and text[1:] in _ZH_DIGITS:
        return 10 + _ZH_DIGITS[text[1:]]
    if len(text) == 3 and text[1] == "十":
        return _ZH_DIGITS.get(text[0], 0) * 10 + _ZH_DIGITS.get(text[2], 0)
    return None


def window(query: str, now: datetime) -> Span | None:
    """The time span the query names, or None."""
    found = find(query, now)
    return found[0] if found is not None else None


def find(query: str, now: datetime) -> tuple[Span, tuple[int, int]] | None:
    """The time span the query names and where the expression is in the query (so the
    caller can leave its words out of the keyword search: no fact holds "2022")."""
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    a = _ABSOLUTE.search(query)
    if a is not None:
        span = _absolute(a, now)
        if span is not None:
            return span, a.span()
    m = _EN.search(query)
    if m is not None:
        span = _english(m, now)
        if span is not None:
            return span, m.span()
    z = _ZH.search(query)
    if z is not None:
        span = _chinese(z, now)
        if span is not None:
            return span, z.span()
    return None


def without(query: str, where: tuple[int, int]) -> str:
    """The query with the time expression at `where` taken out."""
    return (query[: where[0]] + " " + query[where[1] :]).strip()


def _absolute(m: re.Match[str], now: datetime) -> Span | None:
    g = m.groupdict()
    tz = now.tzinfo
    try:
        for d, mo, y in (
            ("d1", "m1", "y1"),
            ("d2", "m2", "y2"),
            ("d4", "m4", "y4"),
            ("d5", "m5", "y5"),
        ):
            if g.get(y) and g.get(mo):
                month = _month_number(g[mo])
                if g.get(d):
                    start = datetime(int(g[y]), month, int(g[d]), tzinfo=tz)
                    return start, start + timedelta(days=1)
                start = _month_start(int(g[y]), month, tz)
                return start, _month_start(start.year, start.month + 1, tz)
        if g.get("y3") and g.get("m3"):
            start = _month_start(int(g["y3"]), _month_number(g["m3"]), tz)
            return start, _month_start(start.year, start.month + 1, tz)
        year = g.get("y6") or g.get("y7")
        if year:
            return datetime(int(year), 1, 1, tzinfo=tz), datetime(int(year) + 1, 1, 1, tzinfo=tz)
    except ValueError:  # 31 February and the like: no span
        return None
    return None


def _month_number(text: str) -> int:
    return int(text) if text.isdigit() else _MONTHS[fold(text)[:3]]


def _by_unit(now: datetime, unit: str, back: int) -> Span:
    if unit == "day":
        return _ago(now, back, "day")
    if unit == "week":
        return _week(now, back)
    if unit == "month":
        return _month(now, back)
    return _year(now, back)


def _english(m: re.Match[str], now: datetime) -> Span | None:
    word = re.sub(r"\s+", " ", fold(m.group("word")))
    if word in _WORDS:
        unit, back = _WORDS[word]
        return _by_unit(now, unit, back)
    if m.group("period"):
        period = fold(m.group("period"))
        back = 0 if fold(m.group("which")) == "this" else 1
        if period == "weekend":
            return _weekend(now) if back else _weekend(now + timedelta(days=7))
        return _by_unit(now, period, back)
    if m.group("unit"):
        raw = fold(m.group("n"))
        n = int(raw) if raw.isdigit() else _EN_NUMBERS[raw]
        return _ago(now, n, _UNIT[fold(m.group("unit"))])
    month = m.group("month")
    if month:
        return _named_month(now, _MONTHS[fold(month)[:3]])
    return None


def _chinese(m: re.Match[str], now: datetime) -> Span | None:
    word = m.group("word")
    if word:
        if "周末" in word:
            return _weekend(now)
        unit, back = _WORDS[word]
        return _by_unit(now, unit, back)
    if m.group("unit"):
        n = _zh_number(m.group("n"))
        return _ago(now, n, _UNIT[m.group("unit")]) if n else None
    month = _zh_number(m.group("month"))
    if month and 1 <= month <= 12:
        return _named_month(now, month)
    return None


# A question that asks *when* (docs/recall.md#scoring, WHEN_EVIDENCE): its answer is a
# statement that says when ("yesterday", "上周日", "on 7 May"), which the question's own
# words rarely match.
_ASKS_WHEN = re.compile(
    r"\bwhen\b|\bwhat\s+(?:date|day|time|year|month|week)\b|\bhow\s+long\s+ago\b"
    r"|\bwhich\s+(?:date|day|year|month|week)\b"
    r"|什么时候|哪天|哪一天|几月|几号|哪年|哪一年|哪个月|何时|多久|多长时间",
    re.IGNORECASE,
)
# Any expression of time in a statement: the spans `find` resolves, and the relative or
# calendar words it leaves alone (weekdays, "tonight", "next week", "周二", "7月13号").
# English by word lookup and Chinese by a pattern run only on text with an ideograph:
# one alternation over both cost ~90 µs on a long English turn, this ~10.
_EN_TIME_WORDS = frozenset(
    "yesterday today tonight tomorrow ago last next weekend monday tuesday wednesday "
    "thursday friday saturday sunday january february march april june july august "
    "september october november december".split()
)
_EN_WORD = re.compile(r"[a-z]+|\b(?:19|20)\d\d\b")
_EN_THIS = re.compile(
    r"\bthis\s+(?:morning|afternoon|evening|week|month|year|summer|winter|spring|fall)\b"
)
_HAS_CJK = re.compile(r"[\u4e00-\u9fff]")
_ZH_TIME = re.compile(
    r"前天|昨天|昨晚|今天|今晚|明天|后天|上周|下周|这周|本周|周末|上个月|下个月|这个月|去年|今年|明年|前年"
    r"|[上下这]个?(?:星期|礼拜)|(?:周|星期|礼拜)[一二三四五六日天]|\d{1,2}\s*月|[一二三四五六七八九十]{1,2}月"
    r"|\d{1,2}\s*[日号]|\d+\s*(?:天|周|个月|年)[之以]?前|那天|当天"
)


def asks_when(query: str) -> bool:
    """The query asks for a time ("when did…", "什么时候", "哪天")."""
    return _ASKS_WHEN.search(query) is not None


@functools.lru_cache(maxsize=65536)
def mentions_time(text: str) -> bool:
    """The text says when something happened (or will). Cached: a user's pool meets
    many questions."""
    low = fold(text)
    if any(w[0].isdigit() or w in _EN_TIME_WORDS for w in _EN_WORD.findall(low)):
        return True
    if _EN_THIS.search(low) is not None:
        return True
    return _HAS_CJK.search(text) is not None and _ZH_TIME.search(text) is not None
