"""Webhooks end to end (docs/webhooks.md): admin API → outbox rows written with the events
→ the dispatcher → a real HTTP receiver on loopback (tests/fakes/webhook_receiver.py).

The API is called in-process (ASGI transport, the `client` fixture); deliveries travel over
a real loopback socket to the receiver. The dispatcher (workers/webhooks.py) is run one
pass at a time with an explicit `now`, so retries and backoff need no waiting; job.failed
comes from a real arq worker in-process (tests/integration/test_pipeline.py's harness).
Signatures are checked with the `standardwebhooks` reference library.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import asyncpg
import httpx
import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from app import clock
from app.memory.model import Candidate, FactType, SourceKind
from app.store.db import tenant_tx
from app.writer import SYSTEM_RIGHTS, write
from tests.conftest import Tenant
from tests.fakes.webhook_receiver import Received, Receiver
from workers.webhooks import Dispatcher

ALL = [
    "fact.written",
    "fact.superseded",
    "fact.deleted",
    "candidate.promoted",
    "user.forgotten",
    "job.failed",
]


@pytest.fixture(scope="module")
def rx() -> Iterator[Receiver]:
    with Receiver() as receiver:
        yield receiver


def ctx_of(app: Any) -> Any:
    return app.state.ctx


async def register(
    client: httpx.AsyncClient, t: Tenant, url: str, events: list[str] | None = None
) -> dict[str, Any]:
    res = await client.post(
        "/v1/admin/webhooks", json={"url": url, "events": events or ALL}, headers=t.h("admin")
    )
    assert res.status_code == 201, res.text
    body: dict[str, Any] = res.json()
    assert body["secret"].startswith("whsec_")
    return body


async def write_fact(
    client: httpx.AsyncClient, t: Tenant, user: str, statement: str, **kw: Any
) -> dict[str, Any]:
    body = {"type": "semantic", "statement": statement, "source": {"kind": "user_message"}, **kw}
    res = await client.post(f"/v1/users/{user}/facts", json=body, headers=t.h())
    assert res.status_code in (200, 201, 202), res.text
    out: dict[str, Any] = res.json()
    return out


async def deliver(app: Any, passes: int = 1, **kw: Any) -> None:
    d = Dispatcher(ctx_of(app), **kw)
    try:
        for _ in range(passes):
            await d.run_once()
    finally:
        await d.stop()


def verified(secret: str, r: Received) -> dict[str, Any]:
    out: dict[str, Any] = Webhook(secret).verify(r.body, r.headers)
    return out


def path() -> str:
    return f"/{uuid.uuid4().hex}"


async def test_signed_delivery_verifies_and_tampering_fails(
    app: Any, client: httpx.AsyncClient, tenant: Tenant, rx: Receiver, owner_db: asyncpg.Pool
) -> None:
    p = path()
    ep = await register(client, tenant, rx.url(p), ["fact.written"])
    written = await write_fact(client, tenant, "u1", "The user prefers dark mode in every editor")
    await deliver(app)
    [got] = rx.at(p)
    body = verified(ep["secret"], got)
    assert body["type"] == "fact.written"
    assert body["data"]["fact_id"] == written["fact"]["id"]
    assert body["data"]["user_id"] == "u1" and "tenant" not in got.body.decode()
    assert got.headers["webhook-id"].startswith("msg_")
    with pytest.raises(WebhookVerificationError):
        Webhook(ep["secret"]).verify(got.body.replace(b"u1", b"u2"), got.headers)
    with pytest.raises(WebhookVerificationError):
        Webhook("whsec_" + "QUJD" * 8).verify(got.body, got.headers)
    # no text and no secret: in the body, in the stored rows, in the listing
    assert b"dark mode" not in got.body
    listing = await client.get("/v1/admin/webhooks", headers=tenant.h("admin"))
    assert ep["secret"] not in listing.text and listing.json()["items"][0]["id"] == ep["id"]
    secret_part = ep["secret"].removeprefix("whsec_")
    for table in ("webhook_endpoints", "webhook_deliveries", "audit_events"):
        dump = await owner_db.fetchval(
            f"SELECT coalesce(string_agg(t::text, ''), '') FROM {table} t WHERE tenant_id = $1",
            tenant.id,
        )
        assert secret_part not in dump, table
    # an agent key may not manage webhooks
    res = await client.get("/v1/admin/webhooks", headers=tenant.h("agent"))
    assert res.status_code == 403


async def test_retry_after_500_then_delivered_with_the_same_id(
    app: Any, client: httpx.AsyncClient, tenant: Tenant, rx: Receiver
) -> None:
    p = path()
    rx.script[p] = [500]
    ep = await register(client, tenant, rx.url(p), ["fact.written"])
    await write_fact(client, tenant, "u1", "The user drinks green tea every morning")
    d = Dispatcher(ctx_of(app), retry_base_s=60)
    try:
        await d.run_once()
        page = await client.get(
            f"/v1/admin/webhooks/{ep['id']}/deliveries", headers=tenant.h("admin")
        )
        [row] = page.json()["items"]
        assert row["state"] == "pending" and row["attempts"] == 1
        assert row["last_status"] == 500 and row["last_error"] == "http_500"
        await d.run_once()  # not due yet: backoff
        assert len(rx.at(p)) == 1
        await d.run_once(clock.now() + timedelta(minutes=5))
    finally:
        await d.stop()
    first, second = rx.at(p)
    assert first.headers["webhook-id"] == second.headers["webhook-id"]
    assert first.body == second.body
    verified(ep["secret"], second)
    page = await client.get(
        f"/v1/admin/webhooks/{ep['id']}/deliveries",
        params={"state": "delivered"},
        headers=tenant.h("admin"),
    )
    assert [r["attempts"] for r in page.json()["items"]] == [2]


async def test_dead_after_n_failures_then_admin_replay_delivers(
    app: Any, client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant, rx: Receiver
) -> None:
    p = path()
    rx.script[p] = [500, 503, 500]
    ep = await register(client, tenant, rx.url(p), ["fact.written"])
    await write_fact(client, tenant, "u1", "The user plays the cello on weekends")
    d = Dispatcher(ctx_of(app), max_attempts=3, retry_base_s=1)
    try:
        for hours in (0, 1, 2, 3):
            await d.run_once(clock.now() + timedelta(hours=hours))
        assert len(rx.at(p)) == 3  # the 4th pass finds nothing: dead is not retried
        base = f"/v1/admin/webhooks/{ep['id']}/deliveries"
        dead = (await client.get(base, params={"state": "dead"}, headers=tenant.h("admin"))).json()
        [row] = dead["items"]
        assert row["attempts"] == 3 and row["last_error"] == "http_500"
        replay = f"{base}/{row['id']}/replay"
        # another tenant's admin: 404 for the endpoint, its deliveries and the replay
        assert (await client.post(replay, headers=other_tenant.h("admin"))).status_code == 404
        assert (await client.get(base, headers=other_tenant.h("admin"))).status_code == 404
        res = await client.post(replay, headers=tenant.h("admin"))
        assert res.status_code == 200 and res.json()["state"] == "pending", res.text
        await d.run_once()
    finally:
        await d.stop()
    got = rx.at(p)
    assert len(got) == 4 and len({r.headers["webhook-id"] for r in got}) == 1
    verified(ep["secret"], got[-1])
    # delivered now: replaying it again is a conflict; an unknown id is 404
    res = await client.post(replay, headers=tenant.h("admin"))
    assert res.status_code == 409 and res.json()["error"]["code"] == "conflict"
    res = await client.post(f"{base}/{uuid.uuid4()}/replay", headers=tenant.h("admin"))
    assert res.status_code == 404


async def test_a_write_that_rolls_back_announces_nothing(
    app: Any, client: httpx.AsyncClient, tenant: Tenant, rx: Receiver, owner_db: asyncpg.Pool
) -> None:
    p = path()
    await register(client, tenant, rx.url(p), ["fact.written"])
    ctx = ctx_of(app)

    def candidate(statement: str) -> Candidate:
        return Candidate(
            user_id="u1",
            type=FactType.SEMANTIC,
            statement=statement,
            source_kind=SourceKind.EXPLICIT_INSTRUCTION,
        )

    class Abort(Exception):
        pass

    with pytest.raises(Abort):
        async with tenant_tx(ctx.pool, tenant.id) as conn:
            policy = await ctx.policies.get(conn, tenant.id)
            outcome = await write(
                ctx,
                conn,
                tenant.id,
                SYSTEM_RIGHTS,
                candidate("The user collects stamps"),
                policy,
                clock.now(),
            )
            assert outcome.fact_id is not None  # the fact and its outbox row were inserted
            n = await conn.fetchval("SELECT count(*) FROM webhook_deliveries")
            assert n == 1
            raise Abort  # ... and the transaction rolls back
    assert (
        await owner_db.fetchval(
            "SELECT count(*) FROM webhook_deliveries WHERE tenant_id = $1", tenant.id
        )
        == 0
    )
    await deliver(app)
    assert rx.at(p) == []
    async with tenant_tx(ctx.pool, tenant.id) as conn:
        policy = await ctx.policies.get(conn, tenant.id)
        await write(
            ctx,
            conn,
            tenant.id,
            SYSTEM_RIGHTS,
            candidate("The user collects old coins"),
            policy,
            clock.now(),
        )
    await deliver(app)
    assert len(rx.at(p)) == 1


async def _mint(client: httpx.AsyncClient, t: Tenant, user: str) -> str:
    res = await client.post(f"/v1/users/{user}/tokens", json={}, headers=t.h("portal"))
    assert res.status_code == 201, res.text
    return str(res.json()["token"])


async def test_every_event_fires_from_its_path(
    app: Any, client: httpx.AsyncClient, tenant: Tenant, rx: Receiver, owner_db: asyncpg.Pool
) -> None:
    p = path()
    ep = await register(client, tenant, rx.url(p))
    admin = tenant.h("admin")
    # written, then superseded by a new value of the same predicate
    first = await write_fact(
        client,
        tenant,
        "u1",
        "用户喜欢简洁的回答",
        type="profile",
        predicate="preferred_answer_length",
        value="short",
    )
    second = await write_fact(
        client,
        tenant,
        "u1",
        "用户喜欢详细的回答",
        type="profile",
        predicate="preferred_answer_length",
        value="long",
        source={"kind": "explicit_instruction"},
    )
    assert second["decision"] == "superseded", second
    # deleted over REST, over /v1/me, and by an operator's cleanup
    gone = await write_fact(client, tenant, "u1", "The user studies Portuguese")
    res = await client.delete(f"/v1/users/u1/facts/{gone['fact']['id']}", headers=tenant.h())
    assert res.status_code == 200, res.text
    mine = await write_fact(client, tenant, "u2", "The user runs marathons")
    token = await _mint(client, tenant, "u2")
    res = await client.delete(
        f"/v1/me/facts/{mine['fact']['id']}", headers={"Authorization": f"Bearer {token}"}
    )
    assert res.status_code == 200, res.text
    swept = await write_fact(
        client, tenant, "u3", "The user might like sailing", source={"kind": "agent_inference"}
    )
    res = await client.post(
        "/v1/ops/cleanup",
        json={"filter": {"source_kind": "agent_inference"}, "action": "delete", "dry_run": False},
        headers=tenant.h("ops"),
    )
    assert res.status_code == 200 and res.json()["total"] == 1, res.text
    # a candidate held for consent, then confirmed: promoted
    await client.put("/v1/admin/policy", json={"sensitive": {"ask_user": True}}, headers=admin)
    held = await write_fact(
        client,
        tenant,
        "u1",
        "用户有高血压",
        type="profile",
        predicate="health_condition",
        value="高血压",
    )
    assert held["decision"] == "pending", held
    res = await client.post(
        f"/v1/users/u1/candidates/{held['candidate']}/confirm", headers=tenant.h()
    )
    assert res.status_code in (200, 201), res.text
    promoted_fact = res.json()["fact"]["id"]
    # forget-me
    token = await _mint(client, tenant, "u3")
    res = await client.delete("/v1/me", headers={"Authorization": f"Bearer {token}"})
    assert res.status_code == 200, res.text
    # job.failed: a job of a kind no handler knows, run by a real worker
    job_id = uuid.uuid4()
    async with owner_db.acquire() as conn:
        await conn.execute(
            "INSERT INTO jobs (id, tenant_id, user_id, kind, payload) VALUES ($1, $2, 'u1', 'nope',"
            ' \'{"secret_note": "do not send"}\')',
            job_id,
            tenant.id,
        )
    from tests.integration.test_pipeline import running_worker

    async with running_worker(ctx_of(app)):
        deadline = time.monotonic() + 20
        while await owner_db.fetchval("SELECT state FROM jobs WHERE id = $1", job_id) != "failed":
            assert time.monotonic() < deadline, "job never failed"
            await asyncio.sleep(0.05)

    await deliver(app, passes=2)
    bodies = [verified(ep["secret"], r) for r in rx.at(p)]
    by_type: dict[str, list[dict[str, Any]]] = {}
    for b in bodies:
        by_type.setdefault(b["type"], []).append(b["data"])
    assert set(by_type) == set(ALL)
    assert [d["fact_id"] for d in by_type["fact.superseded"]] == [first["fact"]["id"]]
    assert by_type["fact.superseded"][0]["superseded_by"] == second["fact"]["id"]
    deleted = {d["fact_id"]: d for d in by_type["fact.deleted"]}
    assert deleted[gone["fact"]["id"]]["reason"] == "delete"
    assert deleted[mine["fact"]["id"]]["user_id"] == "u2"
    assert deleted[swept["fact"]["id"]]["reason"] == "cleanup"
    [promo] = by_type["candidate.promoted"]
    assert promo["candidate_id"] == held["candidate"] and promo["fact_id"] == promoted_fact
    assert promo["confirmed_by_user"] is True
    [forgot] = by_type["user.forgotten"]
    assert forgot["user_id"] == "u3" and forgot["erased"]["facts"] >= 0
    [failed] = by_type["job.failed"]
    assert failed == {
        "job_id": str(job_id),
        "kind": "nope",
        "user_id": "u1",
        "error_code": "unknown_kind",
        "attempts": failed["attempts"],
    }
    # no statement, value or payload text in any body
    raw = b"".join(r.body for r in rx.at(p)).decode()
    for text in ("简洁", "详细", "高血压", "Portuguese", "marathons", "sailing", "do not send"):
        assert text not in raw, text
    # the health fact is sensitive: its predicate stays out too
    [health] = [d for d in by_type["fact.written"] if d["fact_id"] == promoted_fact]
    assert health["sensitivity"] != "normal" and health["predicate"] is None
    assert "health_condition" not in raw
    [plain] = [d for d in by_type["fact.written"] if d["fact_id"] == first["fact"]["id"]]
    assert plain["sensitivity"] == "normal"
    assert plain["predicate"] == "preferred_answer_length"
    # forget-me erases the user's delivered messages; its own announcement stays due
    count = "SELECT count(*) FROM webhook_deliveries WHERE tenant_id = $1 AND user_id = $2"
    assert await owner_db.fetchval(count, tenant.id, "u2") == 2  # written, deleted
    token = await _mint(client, tenant, "u2")
    res = await client.delete("/v1/me", headers={"Authorization": f"Bearer {token}"})
    assert res.status_code == 200 and res.json()["deleted"]["webhook_deliveries"] == 2
    rows = await owner_db.fetch(
        "SELECT event_type, state FROM webhook_deliveries WHERE tenant_id = $1 AND user_id = $2",
        tenant.id,
        "u2",
    )
    assert [(r["event_type"], r["state"]) for r in rows] == [("user.forgotten", "pending")]


async def test_two_tenants_two_users_never_cross(
    app: Any,
    client: httpx.AsyncClient,
    tenant: Tenant,
    other_tenant: Tenant,
    rx: Receiver,
) -> None:
    pa, pb = path(), path()
    a = await register(client, tenant, rx.url(pa))
    b = await register(client, other_tenant, rx.url(pb))
    ids = {
        "u1": (await write_fact(client, tenant, "u1", "The user likes jazz"))["fact"]["id"],
        "u2": (await write_fact(client, tenant, "u2", "The user likes opera"))["fact"]["id"],
    }
    b_fact = (await write_fact(client, other_tenant, "u1", "The user likes techno"))["fact"]["id"]
    await deliver(app)
    a_got = [verified(a["secret"], r) for r in rx.at(pa)]
    b_got = [verified(b["secret"], r) for r in rx.at(pb)]
    assert {d["data"]["fact_id"] for d in a_got} == set(ids.values())
    assert [d["data"]["fact_id"] for d in b_got] == [b_fact]
    for d in a_got:  # a user's event names only that user's facts
        other = ids["u2" if d["data"]["user_id"] == "u1" else "u1"]
        assert other not in str(d)
    raw_b = b"".join(r.body for r in rx.at(pb)).decode()
    assert all(i not in raw_b for i in ids.values()) and "jazz" not in raw_b
    # B's admin cannot see, rotate or delete A's endpoint
    for method, url in (
        ("GET", f"/v1/admin/webhooks/{a['id']}"),
        ("POST", f"/v1/admin/webhooks/{a['id']}/rotate"),
        ("DELETE", f"/v1/admin/webhooks/{a['id']}"),
    ):
        kw: dict[str, Any] = {"json": {}} if method == "POST" else {}
        res = await client.request(method, url, headers=other_tenant.h("admin"), **kw)
        assert res.status_code == 404, (method, url, res.text)
    listed = await client.get("/v1/admin/webhooks", headers=other_tenant.h("admin"))
    assert [e["id"] for e in listed.json()["items"]] == [b["id"]]


async def test_rotation_signs_with_both_during_grace_then_only_the_new(
    app: Any, client: httpx.AsyncClient, tenant: Tenant, rx: Receiver
) -> None:
    p = path()
    ep = await register(client, tenant, rx.url(p), ["fact.written"])
    old = ep["secret"]
    url = f"/v1/admin/webhooks/{ep['id']}/rotate"
    res = await client.post(url, json={"grace_seconds": 3600}, headers=tenant.h("admin"))
    assert res.status_code == 200, res.text
    new = res.json()["secret"]
    assert new != old and res.json()["previous_secret_until"] is not None
    await write_fact(client, tenant, "u1", "The user bakes sourdough bread")
    await deliver(app)
    [during] = rx.at(p)
    assert len(during.headers["webhook-signature"].split(" ")) == 2
    verified(old, during)
    verified(new, during)
    res = await client.post(url, json={"grace_seconds": 0}, headers=tenant.h("admin"))
    newest = res.json()["secret"]
    await write_fact(client, tenant, "u1", "The user keeps bees in the garden")
    await deliver(app)
    after = rx.at(p)[-1]
    assert len(after.headers["webhook-signature"].split(" ")) == 1
    verified(newest, after)
    for stale in (old, new):
        with pytest.raises(WebhookVerificationError):
            Webhook(stale).verify(after.body, after.headers)


async def test_endpoint_input_is_checked(client: httpx.AsyncClient, tenant: Tenant) -> None:
    admin = tenant.h("admin")
    for body in (
        {"url": "ftp://example.com/hook", "events": ["fact.written"]},
        {"url": "http://user:pw@example.com/hook", "events": ["fact.written"]},
        {"url": "not a url", "events": ["fact.written"]},
        {"url": "https://example.com/hook", "events": []},
        {"url": "https://example.com/hook", "events": ["fact.exploded"]},
        {"url": "https://example.com/hook", "events": ["fact.written"], "extra": 1},
    ):
        res = await client.post("/v1/admin/webhooks", json=body, headers=admin)
        assert res.status_code == 422, (body, res.text)
        assert res.json()["error"]["code"] == "invalid_request"
    res = await client.get(f"/v1/admin/webhooks/{uuid.uuid4()}", headers=admin)
    assert res.status_code == 404 and res.json()["error"]["code"] == "not_found"
    res = await client.post(
        f"/v1/admin/webhooks/{uuid.uuid4()}/rotate", json={"grace_seconds": -1}, headers=admin
    )
    assert res.status_code == 422


async def test_a_retried_create_or_rotate_never_replays_or_stores_the_secret(
    client: httpx.AsyncClient, tenant: Tenant, rx: Receiver, owner_db: asyncpg.Pool
) -> None:
    """The signing secret is a credential shown once: an Idempotency-Key retry of the
    create or the rotation must not show it again, nor keep it in the idempotency record."""
    admin = tenant.h("admin", **{"Idempotency-Key": f"wh-{uuid.uuid4()}"})
    body = {"url": rx.url(path()), "events": ["fact.written"]}
    first = await client.post("/v1/admin/webhooks", json=body, headers=admin)
    assert first.status_code == 201, first.text
    secret = first.json()["secret"]
    again = await client.post("/v1/admin/webhooks", json=body, headers=admin)
    assert again.status_code == 409 and secret not in again.text, again.text
    assert again.json()["error"]["details"]["first"]["id"] == first.json()["id"]
    url = f"/v1/admin/webhooks/{first.json()['id']}/rotate"
    rot_h = tenant.h("admin", **{"Idempotency-Key": f"rot-{uuid.uuid4()}"})
    rotated = await client.post(url, json={"grace_seconds": 0}, headers=rot_h)
    assert rotated.status_code == 200, rotated.text
    new = rotated.json()["secret"]
    replay = await client.post(url, json={"grace_seconds": 0}, headers=rot_h)
    assert replay.status_code == 409 and new not in replay.text, replay.text
    dump = await owner_db.fetchval(
        "SELECT coalesce(string_agg(t::text, ''), '') FROM idempotency t WHERE tenant_id = $1",
        tenant.id,
    )
    for s in (secret, new):
        assert s.removeprefix("whsec_") not in dump


async def test_a_scope_limited_admin_key_cannot_reach_every_scopes_events(
    client: httpx.AsyncClient, tenant_factory: Any, rx: Receiver
) -> None:
    """Endpoints receive the events of every scope (ids, scope names, users): a key
    limited to some scopes may not register, read or replay them (as /v1/ops/stats)."""
    t = await tenant_factory(scoped={"role": "admin", "scopes": ["project:a"]})
    ep = await register(client, t, rx.url(path()))
    scoped = t.h("scoped")
    for method, url in (
        ("POST", "/v1/admin/webhooks"),
        ("GET", "/v1/admin/webhooks"),
        ("GET", f"/v1/admin/webhooks/{ep['id']}"),
        ("GET", f"/v1/admin/webhooks/{ep['id']}/deliveries"),
        ("POST", f"/v1/admin/webhooks/{ep['id']}/rotate"),
        ("POST", f"/v1/admin/webhooks/{ep['id']}/deliveries/{uuid.uuid4()}/replay"),
        ("DELETE", f"/v1/admin/webhooks/{ep['id']}"),
    ):
        kw: dict[str, Any] = {}
        if url == "/v1/admin/webhooks" and method == "POST":
            kw["json"] = {"url": rx.url(path()), "events": ["fact.written"]}
        elif method == "POST":
            kw["json"] = {}
        res = await client.request(method, url, headers=scoped, **kw)
        assert res.status_code == 403, (method, url, res.text)
        assert res.json()["error"]["code"] == "forbidden"
    still = await client.get(f"/v1/admin/webhooks/{ep['id']}", headers=t.h("admin"))
    assert still.status_code == 200


class _Dribbler:
    """A receiver that answers 200 with a huge body, one byte every 0.2 s (or, with
    `headers_too`, dribbles its status line): a hostile endpoint holding the dispatcher."""

    def __init__(self, headers_too: bool = False) -> None:
        import socket
        import threading

        self.headers_too = headers_too
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/hook"

    def _serve(self) -> None:
        import threading

        self.sock.settimeout(0.2)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: Any) -> None:
        head = b"HTTP/1.1 200 OK\r\ncontent-length: 100000000\r\n\r\n"
        try:
            conn.recv(65536)
            if not self.headers_too:
                conn.sendall(head)
            data = head if self.headers_too else b"x" * 100000
            for b in data:
                if self.stop.is_set():
                    break
                conn.sendall(bytes([b]))
                time.sleep(0.2)
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self.stop.set()
        self.sock.close()


@pytest.mark.parametrize("headers_too", [False, True])
async def test_a_dribbling_receiver_cannot_hold_the_dispatcher(
    app: Any, client: httpx.AsyncClient, tenant: Tenant, headers_too: bool
) -> None:
    """The timeout bounds the whole attempt and the answer's body is never read: a
    receiver sending a byte at a time stays under a per-read timeout forever."""
    slow = _Dribbler(headers_too)
    try:
        ep = await register(client, tenant, slow.url(), ["fact.written"])
        await write_fact(client, tenant, "u1", "The user collects vintage postcards")
        started = time.monotonic()
        await asyncio.wait_for(deliver(app, timeout_s=1.0), 15)
        assert time.monotonic() - started < 5
    finally:
        slow.close()
    page = await client.get(f"/v1/admin/webhooks/{ep['id']}/deliveries", headers=tenant.h("admin"))
    [row] = page.json()["items"]
    if headers_too:
        assert row["state"] == "pending" and row["last_error"] == "timeout"
    else:
        assert row["state"] == "delivered" and row["last_status"] == 200


async def test_the_dispatcher_connects_to_the_address_it_checked(
    app: Any, client: httpx.AsyncClient, tenant: Tenant, rx: Receiver, owner_db: asyncpg.Pool
) -> None:
    """DNS rebinding: the name is resolved once per attempt, by the check, and the
    connection goes to that answer. The endpoint's name resolves nowhere but in the
    dispatcher's resolver, so a second lookup (httpx's own) could not have reached the
    receiver; the receiver still sees the name in Host."""
    p = path()
    ep = await register(client, tenant, rx.url(p), ["fact.written"])
    port = urlsplit(rx.url(p)).port
    named = f"http://hooks.memgate.invalid:{port}{p}"
    await owner_db.execute(
        "UPDATE webhook_endpoints SET url = $1 WHERE tenant_id = $2 AND id = $3",
        named,
        tenant.id,
        uuid.UUID(ep["id"]),
    )
    asked: list[str] = []

    async def resolve(host: str, port: int) -> list[str]:
        asked.append(host)
        return ["127.0.0.1"] if host == "hooks.memgate.invalid" else []

    await write_fact(client, tenant, "u1", "The user restores old bicycles")
    await deliver(app, resolve=resolve)
    [got] = rx.at(p)
    assert got.headers["host"] == f"hooks.memgate.invalid:{port}"
    assert verified(ep["secret"], got)["type"] == "fact.written"
    assert asked == ["hooks.memgate.invalid"]
