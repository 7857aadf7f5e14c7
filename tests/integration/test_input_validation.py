"""Bad input is a 4xx with the error envelope and writes nothing (issue 21 §3), over real
HTTP against the live uvicorn (`http`), except where the test needs the app's objects."""

from __future__ import annotations

import asyncio
import base64
import json
import socket
import uuid
from datetime import UTC, datetime
from typing import Any

import asyncpg
import httpx
import orjson
import pytest

from tests.conftest import Live, Tenant


def fact(statement: str = "I prefer tables for output", **extra: Any) -> dict[str, Any]:
    return {
        "type": "semantic",
        "statement": statement,
        "source": {"kind": "explicit_instruction"},
        **extra,
    }


def raw(body: str, headers: dict[str, str]) -> dict[str, Any]:
    return {"content": body.encode(), "headers": {**headers, "content-type": "application/json"}}


def assert_refused(res: httpx.Response, status: int = 422, code: str = "invalid_request") -> None:
    assert res.status_code == status, res.text
    err = res.json()["error"]
    assert err["code"] == code and err["message"] and isinstance(err["details"], dict)


async def written(owner_db: asyncpg.Pool, tenant: Tenant) -> tuple[int, int, int]:
    """(facts, audit events, jobs) of the tenant: what a refused request must not change."""
    async with owner_db.acquire() as conn:
        return (
            await conn.fetchval("SELECT count(*) FROM facts WHERE tenant_id = $1", tenant.id),
            await conn.fetchval(
                "SELECT count(*) FROM audit_events WHERE tenant_id = $1", tenant.id
            ),
            await conn.fetchval("SELECT count(*) FROM jobs WHERE tenant_id = $1", tenant.id),
        )


# --------------------------------------------------------------------------------- NUL


def _deep(levels: int, leaf: Any) -> Any:
    value = leaf
    for _ in range(levels):
        value = {"k": [value]}
    return value


@pytest.mark.parametrize(
    "body",
    [
        fact("I like tea\x00 a lot"),
        fact(value="tea\x00"),
        fact(value=_deep(5, "x\x00y")),
        fact(value={"ke\x00y": 1}),
        fact(source={"kind": "user_message", "evidence": "said\x00so"}),
        fact(source={"kind": "user_message", "trace_id": "t\x00"}),
        fact(scope="project:a\x00b"),
    ],
    ids=["statement", "value", "value-deep", "value-key", "evidence", "trace_id", "scope"],
)
async def test_nul_in_a_fact_is_refused_and_nothing_is_written(
    http: httpx.AsyncClient, tenant: Tenant, owner_db: asyncpg.Pool, body: dict[str, Any]
) -> None:
    before = await written(owner_db, tenant)
    res = await http.post("/v1/users/u-nul/facts", json=body, headers=tenant.h())
    assert_refused(res)
    assert await written(owner_db, tenant) == before


async def test_nul_in_a_session_turn_is_refused_before_redis(
    http: httpx.AsyncClient, tenant: Tenant, owner_db: asyncpg.Pool
) -> None:
    sid = f"s-{uuid.uuid4().hex[:8]}"
    turn = {"user_id": "u-nul", "role": "user", "content": "hello\x00world", "turn_id": "t1"}
    before = await written(owner_db, tenant)
    res = await http.post(f"/v1/sessions/{sid}/turns", json=turn, headers=tenant.h())
    assert_refused(res)
    # nothing kept: the session does not exist, so a retry cannot duplicate the turn
    assert (await http.get(f"/v1/sessions/{sid}", headers=tenant.h())).status_code == 404
    assert await written(owner_db, tenant) == before
    ok = await http.post(
        f"/v1/sessions/{sid}/turns", json={**turn, "content": "hello world"}, headers=tenant.h()
    )
    assert ok.status_code == 201, ok.text
    got = (await http.get(f"/v1/sessions/{sid}", headers=tenant.h())).json()
    assert [t["content"] for t in got["turns"]] == ["hello world"]


@pytest.mark.parametrize(
    "path",
    [
        "/v1/users/a%00b/facts",
        "/v1/users/u1/facts?predicate=a%00",
        "/v1/users/u1/facts?cursor=%00",
        "/v1/traces/t%00",
        "/v1/sessions/s%00",
        "/v1/users/u1/facts?scope=%FF",  # not UTF-8
    ],
)
async def test_nul_or_bad_utf8_in_path_and_query_is_refused(
    http: httpx.AsyncClient, tenant: Tenant, path: str
) -> None:
    assert_refused(await http.get(path, headers=tenant.h()))


async def test_bad_headers_are_refused(
    http: httpx.AsyncClient, tenant: Tenant, owner_db: asyncpg.Pool, live: Live
) -> None:
    before = await written(owner_db, tenant)
    res = await http.post(
        "/v1/users/u1/facts", json=fact(), headers=tenant.h(**{"Idempotency-Key": "k" * 300})
    )
    assert_refused(res)
    res = await http.post(
        "/v1/users/u1/facts", json=fact(), headers=tenant.h(**{"Idempotency-Key": "a key"})
    )
    assert_refused(res)
    assert await written(owner_db, tenant) == before
    # a NUL in a header (httpx will not send one: a raw request)
    host, port = live.url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(
        b"GET /v1/users/u1/facts HTTP/1.1\r\nHost: x\r\n"
        + f"Authorization: Bearer {tenant.keys['agent']}\r\n".encode()
        + b"X-Trace-Id: a\x00b\r\n\r\n"
    )
    await writer.drain()
    head = await reader.read(200)
    writer.close()
    assert head.startswith((b"HTTP/1.1 400", b"HTTP/1.1 422")), head


# ------------------------------------------------------------------------------- dates


@pytest.mark.parametrize(
    "when",
    [
        "0001-01-01T00:00:00+14:00",  # overflows on the way to UTC
        "9999-12-31T23:59:59-14:00",
        "1899-12-31T00:00:00Z",
        "9000-01-01T00:00:00Z",
        "2024-01-01T00:00:00",  # no zone
        "1700000000",  # a unix time is not a date-time here
    ],
)
async def test_dates_outside_the_documented_range_are_refused(
    http: httpx.AsyncClient, tenant: Tenant, owner_db: asyncpg.Pool, when: str
) -> None:
    before = await written(owner_db, tenant)
    res = await http.post("/v1/users/u-date/facts", json=fact(valid_from=when), headers=tenant.h())
    assert_refused(res)
    res = await http.post(
        "/v1/ops/cleanup",
        json={"action": "archive", "filter": {"created_before": when}},
        headers=tenant.h("ops"),
    )
    assert_refused(res)
    assert await written(owner_db, tenant) == before


@pytest.mark.parametrize("as_of", ["0.5", "1700000000", "2024-01-01", "0001-01-01T00:00:00+14:00"])
async def test_as_of_needs_an_iso_date_time_with_zone(
    http: httpx.AsyncClient, tenant: Tenant, as_of: str
) -> None:
    assert_refused(
        await http.get("/v1/users/u1/facts", params={"as_of": as_of}, headers=tenant.h())
    )


async def test_dates_at_the_edges_of_the_range_are_kept(
    http: httpx.AsyncClient, tenant: Tenant
) -> None:
    res = await http.post(
        "/v1/users/u-date/facts",
        json=fact(valid_from="1900-01-01T00:00:00+14:00"),
        headers=tenant.h(),
    )
    assert res.status_code == 201, res.text
    res = await http.get(
        "/v1/users/u-date/facts", params={"as_of": "8999-12-31T23:59:59-14:00"}, headers=tenant.h()
    )
    assert res.status_code == 200, res.text


# ------------------------------------------------------------------------ JSON numbers


@pytest.mark.parametrize(
    "text",
    [
        '{"type":"semantic","statement":"I like tea","value":NaN}',
        '{"type":"semantic","statement":"I like tea","value":Infinity}',
        '{"type":"semantic","statement":"I like tea","value":-Infinity}',
        '{"type":"semantic","statement":"I like tea","value":1e400}',
        '{"type":"semantic","statement":"I like tea","confidence":NaN}',
        '{"type":"semantic","statement":"I like tea","value":18446744073709551616}',
        '{"type":"semantic","statement":"I like tea","value":[-9223372036854775809]}',
        '{"type":"semantic","statement":"I like tea","value":' + "9" * 5000 + "}",
        '{"type":"semantic","statement":"I like tea","value":-000000000000000000001}',
    ],
    ids=[
        "nan",
        "inf",
        "-inf",
        "1e400",
        "nan-confidence",
        "2^64",
        "-2^63-1",
        "5000-digits",
        "zero-padded",
    ],
)
async def test_non_json_numbers_and_huge_ints_are_refused(
    http: httpx.AsyncClient, tenant: Tenant, owner_db: asyncpg.Pool, text: str
) -> None:
    before = await written(owner_db, tenant)
    res = await http.post("/v1/users/u-num/facts", **raw(text, tenant.h()))
    assert_refused(res)
    assert await written(owner_db, tenant) == before


async def test_ints_of_64_bits_are_stored_exactly(http: httpx.AsyncClient, tenant: Tenant) -> None:
    value = {"max": 2**63 - 1, "min": -(2**63)}
    res = await http.post(
        "/v1/users/u-num/facts", json=fact("my two big numbers", value=value), headers=tenant.h()
    )
    assert res.status_code == 201, res.text
    got = await http.get(f"/v1/users/u-num/facts/{res.json()['fact']['id']}", headers=tenant.h())
    assert got.json()["value"] == value


async def test_deep_json_is_refused_before_parsing(
    http: httpx.AsyncClient, tenant: Tenant, owner_db: asyncpg.Pool
) -> None:
    before = await written(owner_db, tenant)
    for levels in (40, 300, 100_000):
        text = '{"type":"semantic","statement":"I like tea","value":' + "[" * levels
        text += "]" * levels + "}"
        res = await http.post("/v1/users/u-deep/facts", **raw(text, tenant.h()))
        assert_refused(res)
    assert await written(owner_db, tenant) == before
    ok = await http.post(
        "/v1/users/u-deep/facts", json=fact(value=_deep(10, 1)), headers=tenant.h()
    )
    assert ok.status_code == 201, ok.text


# ------------------------------------------------------------------------ ids, cursors


@pytest.mark.parametrize("uid", ["%2E", "%2E%2E", "...", ".%2E"])
async def test_dot_user_ids_are_refused(
    http: httpx.AsyncClient, tenant: Tenant, owner_db: asyncpg.Pool, uid: str
) -> None:
    before = await written(owner_db, tenant)
    assert_refused(await http.post(f"/v1/users/{uid}/facts", json=fact(), headers=tenant.h()))
    assert_refused(await http.get(f"/v1/users/{uid}/facts", headers=tenant.h()))
    assert_refused(
        await http.post(
            f"/v1/sessions/{uid}/turns",
            json={"user_id": "u1", "role": "user", "content": "hi"},
            headers=tenant.h(),
        )
    )
    assert await written(owner_db, tenant) == before


@pytest.mark.parametrize("uid", [".", ".."])
async def test_dot_user_ids_in_bodies_are_refused(
    http: httpx.AsyncClient, tenant: Tenant, uid: str
) -> None:
    sid = f"s-{uuid.uuid4().hex[:8]}"
    res = await http.post(
        f"/v1/sessions/{sid}/turns",
        json={"user_id": uid, "role": "user", "content": "hi"},
        headers=tenant.h(),
    )
    assert_refused(res)
    assert (await http.get(f"/v1/sessions/{sid}", headers=tenant.h())).status_code == 404


def _b64(value: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


BAD_CURSORS = [
    "!!!",
    "aGVsbG8",  # "hello": not JSON
    _b64({"a": 1}),
    _b64(["0001-01-01T00:00:00+14:00", str(uuid.uuid4())]),
    _b64(["2024-01-01T00:00:00", str(uuid.uuid4())]),
    _b64(["2024-01-01T00:00:00+00:00", "not-a-uuid"]),
    _b64("5"),
    _b64(True),
    _b64(5.5),
    _b64(2**70),
    _b64(-1),
    _b64([1, 2, 3]),
]


async def test_malformed_cursors_on_every_list_route_are_422(
    http: httpx.AsyncClient, tenant: Tenant
) -> None:
    token = (await http.post("/v1/users/u-cur/tokens", json={}, headers=tenant.h())).json()
    me = {"Authorization": f"Bearer {token['token']}"}
    routes = [
        ("/v1/users/u-cur/facts", tenant.h()),
        ("/v1/users/u-cur/candidates", tenant.h()),
        ("/v1/users/u-cur/audit", tenant.h("ops")),
        ("/v1/admin/keys", tenant.h("admin")),
        ("/v1/me/facts", me),
        ("/v1/me/candidates", me),
    ]
    for path, headers in routes:
        for cursor in BAD_CURSORS:
            res = await http.get(path, params={"cursor": cursor}, headers=headers)
            assert res.status_code == 422, (path, cursor, res.text)
            assert res.json()["error"]["code"] == "invalid_request"


# ------------------------------------------------------------------------------- slots


async def test_slots_over_the_session_limit_are_refused_before_the_write(
    http: httpx.AsyncClient, tenant: Tenant
) -> None:
    sid = f"s-{uuid.uuid4().hex[:8]}"
    opened = await http.post(
        f"/v1/sessions/{sid}/turns",
        json={"user_id": "u-slots", "role": "user", "content": "hi"},
        headers=tenant.h(),
    )
    assert opened.status_code == 201
    chunk = "x" * 15_000
    for i in range(4):  # 4 x 15 KB fit under the session's 64 KB
        res = await http.put(
            f"/v1/sessions/{sid}/slots", json={"slots": {f"s{i}": chunk}}, headers=tenant.h()
        )
        assert res.status_code == 200, res.text
    res = await http.put(
        f"/v1/sessions/{sid}/slots", json={"slots": {"s4": chunk}}, headers=tenant.h()
    )
    assert_refused(res, 413, "payload_too_large")
    got = (await http.get(f"/v1/sessions/{sid}", headers=tenant.h())).json()
    assert sorted(got["slots"]) == ["s0", "s1", "s2", "s3"]  # the refused slot is not kept
    # replacing a slot by a smaller one still works at the limit
    res = await http.put(
        f"/v1/sessions/{sid}/slots", json={"slots": {"s0": None, "s4": "y"}}, headers=tenant.h()
    )
    assert res.status_code == 200 and sorted(res.json()["slots"]) == ["s1", "s2", "s3", "s4"]


async def test_concurrent_slot_merges_never_exceed_the_limit(
    http: httpx.AsyncClient, tenant: Tenant
) -> None:
    sid = f"s-{uuid.uuid4().hex[:8]}"
    await http.post(
        f"/v1/sessions/{sid}/turns",
        json={"user_id": "u-slots", "role": "user", "content": "hi"},
        headers=tenant.h(),
    )
    chunk = "z" * 15_000
    results = await asyncio.gather(
        *[
            http.put(
                f"/v1/sessions/{sid}/slots", json={"slots": {f"c{i}": chunk}}, headers=tenant.h()
            )
            for i in range(8)
        ]
    )
    assert sorted(r.status_code for r in results) == [200] * 4 + [413] * 4
    got = (await http.get(f"/v1/sessions/{sid}", headers=tenant.h())).json()
    assert len(got["slots"]) == 4


# ------------------------------------------------------------------ a 500 and keep-alive


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    length = next(
        int(v)
        for k, _, v in (ln.partition(": ") for ln in lines[1:])
        if k.lower() == "content-length"
    )
    return status, await reader.readexactly(length)


async def test_a_500_keeps_the_connection_for_the_next_request(migrated: Any) -> None:
    """Starlette re-raises after its 500 and uvicorn then closes the connection; the guard
    answers the envelope itself, so the next request on the connection is answered."""
    import uvicorn

    from app.config import get_settings
    from app.main import create_app

    get_settings.cache_clear()
    application = create_app()

    @application.get("/test-only/boom")
    async def boom() -> None:
        raise RuntimeError("boom")

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(application, host="127.0.0.1", port=port, log_level="critical")
    )
    task = asyncio.create_task(server.serve())
    try:
        for _ in range(300):
            if server.started:
                break
            await asyncio.sleep(0.1)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        request = b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n"
        writer.write(request % b"/test-only/boom")
        status, body = await _read_response(reader)
        assert status == 500 and json.loads(body)["error"]["code"] == "internal"
        writer.write(request % b"/healthz")  # the same connection
        status, body = await _read_response(reader)
        assert status == 200, body
        writer.close()
        # and with a keep-alive httpx client
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as c:
            assert (await c.get("/test-only/boom")).status_code == 500
            assert (await c.get("/healthz")).status_code == 200
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 30)


# ------------------------------------------------------------------- the recall log


async def test_one_bad_recall_log_entry_does_not_drop_the_batch(
    app: Any, tenant: Tenant, owner_db: asyncpg.Pool
) -> None:
    from app.recall import RecallLog
    from app.store.recall import LogEntry

    now = datetime.now(UTC)

    def entry(trace_id: str, session_id: str) -> LogEntry:
        return LogEntry(
            tenant_id=tenant.id,
            trace_id=trace_id,
            user_id="u-log",
            scope="global",
            fact_ids=[],
            detail={"session_id": session_id},
            tokens=1,
            tier="continue",
            at=now,
        )

    good = [f"good-{uuid.uuid4().hex[:6]}" for _ in range(5)]
    batch = [
        entry(good[0], "s"),
        entry(good[1], "s"),
        entry("bad", "s\x00"),
        *(entry(t, "s") for t in good[2:]),
    ]
    await RecallLog.write(app.state.ctx.pool, batch)
    async with owner_db.acquire() as conn:
        kept = await conn.fetch("SELECT trace_id FROM recall_log WHERE tenant_id = $1", tenant.id)
    assert sorted(r["trace_id"] for r in kept) == sorted(good)


# ------------------------------------------------------ bodies that break the schema


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/users/u1/recall", {"query": "tea", "min_score": False}),
        ("/v1/users/u1/recall", {"query": "tea", "k": "5"}),
        ("/v1/users/u1/recall", {"query": "tea", "k": True}),
        ("/v1/users/u1/recall", {"query": "tea", "k": 2.5}),
        ("/v1/users/u1/facts", {**fact(), "consent": "yes"}),
        ("/v1/users/u1/facts", {**fact(), "confidence": "0.5"}),
        ("/v1/users/u1/facts", {**fact(), "ttl_days": True}),
        ("/v1/users/u1/facts", fact("   ")),
        ("/v1/users/u1/tokens", {"ttl_seconds": "60"}),
    ],
)
async def test_bodies_that_break_the_schema_are_refused(
    http: httpx.AsyncClient,
    tenant: Tenant,
    owner_db: asyncpg.Pool,
    path: str,
    body: dict[str, Any],
) -> None:
    before = await written(owner_db, tenant)
    assert_refused(await http.post(path, json=body, headers=tenant.h()))
    assert await written(owner_db, tenant) == before


async def test_a_patch_that_changes_nothing_is_refused(
    http: httpx.AsyncClient, tenant: Tenant
) -> None:
    made = await http.post("/v1/users/u1/facts", json=fact("I use vim"), headers=tenant.h())
    fid = made.json()["fact"]["id"]
    for body in ({}, {"statement": None}, {"consent": True}, {"confidence": None}):
        res = await http.patch(f"/v1/users/u1/facts/{fid}", json=body, headers=tenant.h())
        assert_refused(res)
    history = await http.get(f"/v1/users/u1/facts/{fid}/history", headers=tenant.h())
    assert len(history.json()["items"]) == 1


async def test_a_body_that_never_fully_arrived_is_not_run(
    live: Any, tenant: Tenant, owner_db: asyncpg.Pool
) -> None:
    """A complete JSON body under a Content-Length 50 bytes too long, then the client
    leaves: the request must not run (with and without an Idempotency-Key)."""
    before = await written(owner_db, tenant)
    body = orjson.dumps(
        {
            "type": "semantic",
            "statement": "用户喜欢喝乌龙茶",
            "source": {"kind": "explicit_instruction"},
        }
    )
    host, port = live.url.removeprefix("http://").split(":")
    for extra in (b"", b"Idempotency-Key: trunc-1\r\n"):
        _, writer = await asyncio.open_connection(host, int(port))
        writer.write(
            b"POST /v1/users/u-trunc/facts HTTP/1.1\r\nHost: x\r\n"
            + f"Authorization: Bearer {tenant.keys['agent']}\r\n".encode()
            + b"Content-Type: application/json\r\n"
            + extra
            + f"Content-Length: {len(body) + 50}\r\n\r\n".encode()
            + body
        )
        await writer.drain()
        await asyncio.sleep(0.3)
        writer.close()
        await asyncio.sleep(0.5)
    assert await written(owner_db, tenant) == before
