"""A synthetic but realistic corpus: zh+en facts over 5k users, with real embeddings.

A few thousand distinct statements are generated from templates (preferences, allergies,
tech stack, locations, employment, habits, procedures, episodic events with order
numbers like ABC123) and embedded once with the default embedder. Facts reuse those
vectors and are loaded with binary COPY (asyncpg `copy_records_to_table`), so a million
rows take minutes, not hours. `search_text` is the real segmented text
(`app.memory.text.search_document`), so the generated `tsv` column is what the write path
would store; `embedding_model` is the embedder's own model name, so the dense channel
uses these vectors.

Rows are written in arrival order across all users (not user by user), as a live system
would, so a user's facts are scattered over the heap like in production.
"""

from __future__ import annotations

import asyncio
import random
import string
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import numpy as np
import orjson
from pgvector.asyncpg import register_vector

from app.memory.normalize import polarity, statement_key, value_key
from app.memory.text import search_document

POLICY_VERSION = "bench"
N_USERS = 5000
PROBE_SIZES = (10, 200, 2000, 20000)
# The fixed cohort: users whose facts are seeded once, before the first size, and never
# change, so their recalls compare table sizes with the users' own pools held equal.
# Their pools are drawn like a random user's at 1M (about 200 rows, 125 active).
COHORT_USERS = 25
COHORT_MEAN_ROWS = 200

COLUMNS = (
    "id", "tenant_id", "user_id", "scope", "type", "predicate", "value", "value_key",
    "statement", "statement_key", "polarity", "source_kind", "source_trace_id",
    "confidence", "sensitivity", "valid_from", "valid_to", "expires_at", "status",
    "version", "observations", "last_observed_at", "embedding", "embedding_model",
    "search_text", "policy_version", "created_at", "updated_at",
)  # fmt: skip


def user_name(i: int) -> str:
    return f"u{i:05d}"


def probe_name(size: int) -> str:
    return f"probe-{size}"


def cohort_name(i: int) -> str:
    return f"cohort-{i:02d}"


# --------------------------------------------------------------------------- templates
# (predicate, [(zh value, en value)], zh template, en template)
PROFILE: list[tuple[str, list[tuple[str, str]], str, str]] = [
    (
        "allergy",
        [
            ("花生", "peanuts"),
            ("海鲜", "shellfish"),
            ("青霉素", "penicillin"),
            ("乳糖", "lactose"),
            ("芒果", "mango"),
            ("花粉", "pollen"),
            ("麸质", "gluten"),
            ("猫毛", "cat hair"),
            ("尘螨", "dust mites"),
            ("鸡蛋", "eggs"),
        ],
        "我对{v}过敏",
        "I am allergic to {v}",
    ),
    (
        "dietary_restriction",
        [
            ("素食", "vegetarian food only"),
            ("不吃猪肉", "no pork"),
            ("不吃辣", "nothing spicy"),
            ("低糖饮食", "a low-sugar diet"),
            ("清真", "halal food"),
            ("不喝酒", "no alcohol"),
        ],
        "饮食上我{v}",
        "For meals I keep to {v}",
    ),
    (
        "tech_stack",
        [
            ("Python", "Python"),
            ("Go", "Go"),
            ("Rust", "Rust"),
            ("TypeScript", "TypeScript"),
            ("PostgreSQL", "PostgreSQL"),
            ("Kubernetes", "Kubernetes"),
            ("React", "React"),
            ("Java", "Java"),
            ("FastAPI", "FastAPI"),
            ("Redis", "Redis"),
            ("Vue", "Vue"),
            ("Spark", "Spark"),
        ],
        "我们团队主要用{v}开发",
        "Our team mainly builds with {v}",
    ),
    (
        "preferred_output_format",
        [
            ("Markdown 表格", "Markdown tables"),
            ("要点列表", "bullet points"),
            ("简短的段落", "short paragraphs"),
            ("JSON", "JSON"),
            ("带代码示例", "code examples"),
        ],
        "回答请用{v}",
        "Please answer with {v}",
    ),
    (
        "preferred_language",
        [
            ("中文", "Chinese"),
            ("英文", "English"),
            ("日文", "Japanese"),
            ("中英双语", "both Chinese and English"),
        ],
        "我希望你用{v}回复",
        "I want replies in {v}",
    ),
    (
        "preferred_name",
        [
            ("小王", "Wang"),
            ("阿杰", "Jay"),
            ("李老师", "Ms. Li"),
            ("大卫", "David"),
            ("小美", "Mei"),
            ("老张", "Zhang"),
            ("安娜", "Anna"),
            ("汤姆", "Tom"),
        ],
        "请叫我{v}",
        "Please call me {v}",
    ),
    (
        "delivery_carrier",
        [
            ("顺丰", "SF Express"),
            ("京东物流", "JD Logistics"),
            ("中通", "ZTO"),
            ("圆通", "YTO"),
            ("邮政", "China Post"),
        ],
        "快递我只用{v}",
        "For deliveries I only use {v}",
    ),
    (
        "preferred_cuisine",
        [
            ("川菜", "Sichuan food"),
            ("粤菜", "Cantonese food"),
            ("日料", "Japanese food"),
            ("意大利菜", "Italian food"),
            ("东北菜", "northeastern Chinese food"),
            ("泰国菜", "Thai food"),
        ],
        "我最喜欢吃{v}",
        "My favourite food is {v}",
    ),
    (
        "contact_channel",
        [
            ("微信", "WeChat"),
            ("邮件", "email"),
            ("电话", "phone calls"),
            ("钉钉", "DingTalk"),
            ("Slack", "Slack"),
        ],
        "有事请通过{v}联系我",
        "Reach me by {v}",
    ),
    (
        "job_title",
        [
            ("后端工程师", "a backend engineer"),
            ("产品经理", "a product manager"),
            ("数据分析师", "a data analyst"),
            ("设计师", "a designer"),
            ("运维工程师", "an SRE"),
            ("研究员", "a researcher"),
            ("销售经理", "a sales manager"),
        ],
        "我是一名{v}",
        "I work as {v}",
    ),
    (
        "employer",
        [
            ("阿里巴巴", "Alibaba"),
            ("腾讯", "Tencent"),
            ("字节跳动", "ByteDance"),
            ("一家初创公司", "a startup"),
            ("美团", "Meituan"),
            ("华为", "Huawei"),
            ("微软", "Microsoft"),
        ],
        "我在{v}工作",
        "I work at {v}",
    ),
    (
        "location",
        [
            ("北京", "Beijing"),
            ("上海", "Shanghai"),
            ("深圳", "Shenzhen"),
            ("杭州", "Hangzhou"),
            ("成都", "Chengdu"),
            ("广州", "Guangzhou"),
            ("新加坡", "Singapore"),
            ("旧金山", "San Francisco"),
            ("伦敦", "London"),
            ("武汉", "Wuhan"),
        ],
        "我住在{v}",
        "I live in {v}",
    ),
    (
        "language_spoken",
        [
            ("粤语", "Cantonese"),
            ("英语", "English"),
            ("法语", "French"),
            ("日语", "Japanese"),
            ("德语", "German"),
        ],
        "我会说{v}",
        "I speak {v}",
    ),
]

ACTIVITIES = [
    ("跑步", "go running"),
    ("爬山", "go hiking"),
    ("看电影", "watch movies"),
    ("打篮球", "play basketball"),
    ("读书", "read books"),
    ("做饭", "cook"),
    ("钓鱼", "go fishing"),
    ("游泳", "swim"),
    ("写博客", "write blog posts"),
    ("弹吉他", "play the guitar"),
    ("骑车", "cycle"),
    ("下围棋", "play go"),
]
TIMES = [
    ("周末", "on weekends"),
    ("早上", "in the morning"),
    ("晚上", "in the evening"),
    ("下班后", "after work"),
    ("假期里", "on holidays"),
    ("每周三", "every Wednesday"),
]
TOPICS = [
    ("机器学习", "machine learning"),
    ("分布式系统", "distributed systems"),
    ("理财", "personal finance"),
    ("摄影", "photography"),
    ("咖啡", "coffee"),
    ("育儿", "parenting"),
    ("历史", "history"),
    ("健身", "fitness"),
    ("旅行", "travel"),
    ("数据库调优", "database tuning"),
    ("前端性能", "frontend performance"),
]
PROCS = [
    ("提交代码前先跑{x}", "Run {x} before committing code"),
    ("写报告时先给结论再给{x}", "In reports give the conclusion first, then {x}"),
    ("回答技术问题时附上{x}", "Attach {x} when answering technical questions"),
    ("每次部署前检查{x}", "Check {x} before every deployment"),
    ("安排会议时避开{x}", "Avoid {x} when scheduling meetings"),
]
PROC_X = [
    ("单元测试", "the unit tests"),
    ("数据来源", "the data sources"),
    ("参考链接", "reference links"),
    ("数据库迁移", "the database migrations"),
    ("周一上午", "Monday mornings"),
    ("午饭时间", "lunch time"),
    ("回滚方案", "the rollback plan"),
    ("代码格式", "code formatting"),
]
EVENTS = [
    ("{d}在{c}下单，订单号{o}，已发货", "Order {o} placed on {d} in {c} has shipped"),
    (
        "{d}申请退款，订单号{o}，还在处理中",
        "Refund for order {o} requested on {d} is still pending",
    ),
    ("{d}投诉了订单{o}的配送延迟", "On {d} complained about the late delivery of order {o}"),
    ("{d}在{c}预订了酒店，确认号{o}", "Booked a hotel in {c} on {d}, confirmation {o}"),
    ("{d}修改了订单{o}的收货地址到{c}", "Changed the shipping address of order {o} to {c} on {d}"),
    ("{d}咨询了工单{o}关于发票的问题", "Asked about the invoice on ticket {o} on {d}"),
]
CITIES = [(z, e) for z, e in PROFILE[11][1]]


def order_number(rng: random.Random) -> str:
    return "".join(rng.choices(string.ascii_uppercase, k=3)) + f"{rng.randrange(100, 1000)}"


@dataclass
class Base:
    """One distinct statement and its vector; facts reuse both (episodic ones vary the
    order number, which leaves the meaning and the vector the same)."""

    type: str
    predicate: str | None
    value: Any
    statement: str  # may contain {o}: replaced by a fresh order number per fact
    vector: np.ndarray | None = None
    search_text: str = ""
    statement_key: str = ""
    value_key: str | None = None
    polarity: int = 1


MONTHS = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()


def _date(rng: random.Random, zh: bool) -> str:
    m, d = rng.randrange(1, 13), rng.randrange(1, 29)
    return f"{m}月{d}日" if zh else f"{MONTHS[m - 1]} {d}"


def build_bases(n: int, seed: int = 7) -> list[Base]:
    """`n` distinct statements (about half Chinese), deterministic for a seed."""
    rng = random.Random(seed)
    seen: set[str] = set()
    out: list[Base] = []
    # every profile (predicate, value) pair in both languages first: the structured
    # channel has something to find for every predicate
    for pred, values, zh_t, en_t in PROFILE:
        for vz, ve in values:
            for text, v in ((zh_t.format(v=vz), vz), (en_t.format(v=ve), ve)):
                if text not in seen:
                    seen.add(text)
                    out.append(Base("profile", pred, v, text))
    attempts = 0
    while len(out) < n and attempts < n * 50:
        attempts += 1
        zh = rng.random() < 0.5
        kind = rng.choices(["semantic", "episodic", "procedural", "profile"], [35, 40, 15, 10])[0]
        if kind == "semantic":
            if rng.random() < 0.5:
                (az, ae), (tz, te) = rng.choice(ACTIVITIES), rng.choice(TIMES)
                text = f"我喜欢{tz}{az}" if zh else f"I like to {ae} {te}"
            else:
                (oz, oe), (pz, pe) = rng.choice(TOPICS), rng.choice(TOPICS)
                text = (
                    f"最近在研究{oz}和{pz}" if zh else f"Lately I have been studying {oe} and {pe}"
                )
            base = Base("semantic", None, None, text)
        elif kind == "procedural":
            (pz, pe), (xz, xe) = rng.choice(PROCS), rng.choice(PROC_X)
            text = pz.format(x=xz) if zh else pe.format(x=xe)
            base = Base("procedural", None, None, text)
        elif kind == "episodic":
            (ez, ee), (cz, ce) = rng.choice(EVENTS), rng.choice(CITIES)
            text = (ez if zh else ee).format(d=_date(rng, zh), c=cz if zh else ce, o="{o}")
            base = Base("episodic", None, None, text)
        else:  # profile statements phrased differently
            pred, values, _, _ = rng.choice(PROFILE)
            vz, ve = rng.choice(values)
            tag = rng.randrange(1, 1000)
            text = (
                f"补充一下：{vz}这件事很重要（{tag}）" if zh else f"Note {tag}: {ve} matters to me"
            )
            base = Base("profile", pred, vz if zh else ve, text)
        if base.statement in seen:
            continue
        seen.add(base.statement)
        out.append(base)
    for b in out:
        if "{o}" not in b.statement:
            b.search_text = search_document(b.statement, b.predicate or "", _value_text(b.value))
            b.statement_key = statement_key(b.statement)
        b.value_key = value_key(b.predicate, b.value) if b.predicate else None
        b.polarity = polarity(b.statement.replace("{o}", "ABC123"))
    return out


def _value_text(value: Any) -> str:
    return value if isinstance(value, str) else ""


async def embed_bases(bases: list[Base], embedder: Any) -> float:
    """Embed every base statement once (episodic ones with a representative number)."""
    t0 = time.perf_counter()
    texts = [b.statement.replace("{o}", "ABC123") for b in bases]
    vectors: list[list[float]] = []
    for i in range(0, len(texts), 256):
        vectors.extend(await embedder.embed_documents(texts[i : i + 256]))
    for b, v in zip(bases, vectors, strict=True):
        b.vector = np.asarray(v, dtype=np.float32)
    return time.perf_counter() - t0


# --------------------------------------------------------------------------- rows


class FactFactory:
    """Makes COPY records: realistic mix of scopes, types, statuses, sources and ages."""

    def __init__(
        self, bases: list[Base], tenant_id: uuid.UUID, model: str, now: datetime, seed: int
    ) -> None:
        self.rng = random.Random(seed)
        self.tenant_id = tenant_id
        self.model = model
        self.now = now
        self.by_type: dict[str, list[Base]] = {}
        for b in bases:
            self.by_type.setdefault(b.type, []).append(b)
        self.types = list(self.by_type)
        self.type_weights = [
            {"profile": 30, "semantic": 30, "episodic": 30, "procedural": 10}.get(t, 10)
            for t in self.types
        ]

    def record(
        self, user: str, *, status: str | None = None, scope: str | None = None, user_index: int = 0
    ) -> tuple[Any, ...]:
        rng = self.rng
        base = rng.choice(self.by_type[rng.choices(self.types, self.type_weights)[0]])
        statement, search_text, skey = base.statement, base.search_text, base.statement_key
        if "{o}" in statement:
            statement = statement.replace("{o}", order_number(rng))
            search_text = search_document(statement)
            skey = statement_key(statement)
        if status is None:
            r = rng.random()
            status = (
                "active"
                if r < 0.85
                else "superseded"
                if r < 0.94
                else "deleted"
                if r < 0.97
                else "archived"
            )
        if scope is None:
            scope = (
                "global" if rng.random() < 0.7 else f"project:p{user_index % 97}-{rng.randrange(3)}"
            )
        age = timedelta(days=rng.random() ** 1.5 * 400)
        valid_from = self.now - age
        observed = valid_from + (self.now - valid_from) * rng.random() * 0.3
        valid_to = None
        if status == "superseded":
            valid_to = valid_from + (self.now - valid_from) * rng.random()
        expires_at = None
        if base.type == "episodic":
            expires_at = valid_from + timedelta(days=90)
        elif base.predicate in ("job_title", "employer", "location") or rng.random() < 0.2:
            expires_at = valid_from + timedelta(days=365 if base.predicate else 180)
        r = rng.random()
        sensitivity = "normal" if r < 0.85 else "personal" if r < 0.98 else "confidential"
        if base.predicate == "allergy":
            sensitivity = "personal"
        r = rng.random()
        source = (
            "user_message"
            if r < 0.5
            else "explicit_instruction"
            if r < 0.75
            else "tool_observation"
            if r < 0.85
            else "agent_inference"
            if r < 0.95
            else "document"
        )
        return (
            uuid.uuid4(), self.tenant_id, user, scope, base.type, base.predicate,
            base.value, base.value_key, statement, skey, base.polarity, source,
            f"bench-{rng.randrange(1 << 30):x}", round(0.55 + rng.random() * 0.44, 3),
            sensitivity, valid_from, valid_to, expires_at, status, 1,
            1 + int(rng.random() ** 4 * 5), observed, base.vector, self.model,
            search_text, POLICY_VERSION, valid_from, observed,
        )  # fmt: skip


def user_weights(n_users: int, seed: int = 11) -> list[float]:
    """Skewed activity: a log-normal weight per user (a few heavy users, a long tail)."""
    rng = random.Random(seed)
    return [rng.lognormvariate(0, 0.8) for _ in range(n_users)]


async def _prepare(conn: asyncpg.Connection) -> None:
    # binary COPY needs binary codecs: jsonb on the wire is a version byte + the JSON text
    await conn.set_type_codec(
        "jsonb",
        encoder=lambda v: b"\x01" + orjson.dumps(v),
        decoder=lambda b: orjson.loads(b[1:]),
        schema="pg_catalog",
        format="binary",
    )
    await register_vector(conn)
    await conn.execute("SET synchronous_commit = off")


async def copy_facts(conn: asyncpg.Connection, records: list[tuple[Any, ...]]) -> None:
    await conn.copy_records_to_table("facts", records=records, columns=list(COLUMNS))


async def seed_facts(
    dsn: str,
    factory: FactFactory,
    n: int,
    weights: list[float],
    *,
    chunk: int = 20000,
    workers: int = 2,
) -> None:
    """Append `n` facts spread over the 5k users (in arrival order across users).

    Two connections COPY concurrently (one generates while the other loads)."""
    users = [user_name(i) for i in range(len(weights))]
    queue: asyncio.Queue[list[tuple[Any, ...]] | None] = asyncio.Queue(maxsize=workers)

    async def loader() -> None:
        conn = await asyncpg.connect(dsn)
        try:
            await _prepare(conn)
            while (batch := await queue.get()) is not None:
                await copy_facts(conn, batch)
        finally:
            await conn.close()

    tasks = [asyncio.create_task(loader()) for _ in range(workers)]
    try:
        left = n
        while left > 0:
            size = min(chunk, left)
            idx = factory.rng.choices(range(len(users)), weights=weights, k=size)
            batch = [factory.record(users[i], user_index=i) for i in idx]
            left -= size
            while queue.full():  # let a loader take it; surface loader errors early
                done = [t for t in tasks if t.done()]
                for t in done:
                    t.result()
                await asyncio.sleep(0.01)
            await queue.put(batch)
            await asyncio.sleep(0)
        for _ in tasks:
            await queue.put(None)
        await asyncio.gather(*tasks)
    finally:
        for t in tasks:
            t.cancel()


async def seed_probe(dsn: str, factory: FactFactory, size: int) -> None:
    """A dedicated user with exactly `size` active, global facts."""
    conn = await asyncpg.connect(dsn)
    try:
        await _prepare(conn)
        recs = [
            factory.record(probe_name(size), status="active", scope="global") for _ in range(size)
        ]
        await copy_facts(conn, recs)
    finally:
        await conn.close()


async def seed_cohort(
    dsn: str, factory: FactFactory, n_users: int = COHORT_USERS, mean_rows: int = COHORT_MEAN_ROWS
) -> int:
    """The fixed cohort's facts (see COHORT_USERS): log-normal pool sizes around
    `mean_rows`, the usual mix of statuses and scopes, written in arrival order across
    the cohort's users. Deterministic for a given factory seed. Returns the rows added."""
    weights = user_weights(n_users, seed=13)
    scale = mean_rows * n_users / sum(weights)
    order = [i for i, w in enumerate(weights) for _ in range(max(1, round(w * scale)))]
    random.Random(13).shuffle(order)
    conn = await asyncpg.connect(dsn)
    try:
        await _prepare(conn)
        await copy_facts(conn, [factory.record(cohort_name(i), user_index=i) for i in order])
    finally:
        await conn.close()
    return len(order)


async def seed_user_state(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, now: datetime, users: list[str], seed: int = 5
) -> None:
    """Last interactions: most users recent (tier continue), some stale (confirm/new)."""
    rng = random.Random(seed)
    rows = []
    for u in users:
        r = rng.random()
        days = (
            rng.random() * 7
            if r < 0.8
            else 7 + rng.random() * 23
            if r < 0.95
            else 30 + rng.random() * 200
        )
        hint = "上次在讨论数据库迁移" if rng.random() < 0.3 else None
        rows.append(
            (tenant_id, u, now - timedelta(days=days), f"s-{rng.randrange(1 << 20)}", hint, now)
        )
    await conn.copy_records_to_table(
        "user_state",
        records=rows,
        columns=[
            "tenant_id",
            "user_id",
            "last_interaction_at",
            "last_session_id",
            "last_session_hint",
            "updated_at",
        ],
    )


async def analyze(conn: asyncpg.Connection) -> None:
    await conn.execute("VACUUM (ANALYZE) facts")
    await conn.execute("ANALYZE user_state")


def utcnow() -> datetime:
    return datetime.now(UTC)
