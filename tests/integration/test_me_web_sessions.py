"""The /me page's sign-in and session rules without a browser: in process, through the
ASGI transport (`client`), against the real PostgreSQL and Redis
(docs/isolation.md#the-me-page). The browser tests (tests/browser) cover the page itself."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from tests.conftest import Tenant

A = "u-alice"


def fact(statement: str, **kw: Any) -> dict[str, Any]:
    return {
        "type": "semantic",
        "statement": statement,
        "source": {"kind": "explicit_instruction"},
        **kw,
    }


async def link(client: httpx.AsyncClient, t: Tenant, key: str = "portal", **body: Any) -> str:
    r = await client.post(f"/v1/users/{A}/tokens", json={"link": True, **body}, headers=t.h(key))
    assert r.status_code == 201, r.text
    return str(r.json()["login_url"])


FORM = {"content-type": "application/x-www-form-urlencoded"}


async def sign_in(client: httpx.AsyncClient, url: str) -> httpx.Response:
    """Open the link (its page holds a form with the code), then post the form."""
    page = await client.get(url)
    assert page.status_code == 200, page.text
    code = url.split("code=")[1]
    assert f'name="code" value="{code}"' in page.text
    assert f'<strong id="sign-in-user">{A}</strong>' in page.text  # who the link signs in as
    r = await client.post("/me/login", content=f"code={code}", headers=FORM)
    assert r.status_code == 303 and r.headers["location"] == "/me", r.text
    return r


async def test_opening_the_link_spends_nothing_and_only_a_same_origin_post_signs_in(
    app: Any, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """A mail scanner or a link preview that fetches the link leaves it usable; another
    site cannot post a code to sign the browser in as its own user (login CSRF)."""
    url = await link(client, tenant)
    code = url.split("code=")[1]
    for _ in range(3):  # scanners, previews, a double click
        assert (await client.get(url)).status_code == 200
    foreign = await client.post(
        "/me/login", content=f"code={code}", headers={**FORM, "origin": "https://evil.example"}
    )
    assert foreign.status_code == 403 and "memgate_me" not in foreign.headers.get("set-cookie", "")
    cross = await client.post(
        "/me/login", content=f"code={code}", headers={**FORM, "sec-fetch-site": "cross-site"}
    )
    assert cross.status_code == 403
    r = await sign_in(client, url)  # still unspent
    assert "memgate_me=" in r.headers["set-cookie"]
    spent = await client.get(url)
    assert spent.status_code == 400 and "login_link_invalid" in spent.text
    again = await client.post("/me/login", content=f"code={code}", headers=FORM)
    assert again.status_code == 400 and "memgate_me" not in again.headers.get("set-cookie", "")
    assert (await client.get("/me/login?code=short")).status_code == 400


async def test_codes_and_sessions_rest_only_as_hashes(
    app: Any, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    url = await link(client, tenant)
    code = url.split("code=")[1]
    r = await sign_in(client, url)
    cookie = r.headers["set-cookie"]
    sid = re.search(r"memgate_me=([^;]+)", cookie)
    assert sid is not None
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/me" in cookie
    assert "Secure" not in cookie  # a test server over plain http
    redis = app.state.ctx.redis
    keys = [k.decode() for k in await redis.keys("mg:web-*")]
    values = [await redis.get(k) for k in keys]
    assert keys and all(code not in k and sid.group(1) not in k for k in keys)
    assert all(code.encode() not in v and sid.group(1).encode() not in v for v in values if v)
    # the code was spent: its key is gone, the session's remains
    assert not [k for k in keys if k.startswith("mg:web-login:")]
    assert (await client.get(url)).status_code == 400


async def test_a_retried_mint_never_replays_the_link(
    client: httpx.AsyncClient, tenant: Tenant
) -> None:
    headers = tenant.h("portal", **{"Idempotency-Key": "mint-link-1"})
    first = await client.post(f"/v1/users/{A}/tokens", json={"link": True}, headers=headers)
    assert first.status_code == 201 and first.json()["login_url"]
    again = await client.post(f"/v1/users/{A}/tokens", json={"link": True}, headers=headers)
    assert again.status_code == 409
    assert "login_url" not in again.json()["error"]["details"]["first"]
    assert "token" not in again.json()["error"]["details"]["first"]


async def test_the_session_is_never_wider_than_its_token(
    client: httpx.AsyncClient, tenant_factory: Any
) -> None:
    t: Tenant = await tenant_factory(
        limited={"role": "agent", "scopes": ["project:a"], "max_sensitivity": "restricted"}
    )
    await client.post(
        f"/v1/users/{A}/facts",
        json=fact("The user codes in Rust", scope="project:a", predicate="lang", value="rust"),
        headers=t.h(),
    )
    r = await client.post(
        f"/v1/users/{A}/facts",
        json=fact("The user codes in Go", scope="project:b", predicate="lang", value="go"),
        headers=t.h(),
    )
    hidden = r.json()["fact"]["id"]
    await sign_in(client, await link(client, t, "limited"))
    page = await client.get("/me")
    assert "The user codes in Rust" in page.text and "The user codes in Go" not in page.text
    assert (await client.get(f"/me/facts/{hidden}")).status_code == 404
    csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', page.text)
    assert csrf is not None
    # forget-me needs a token that sees every scope: refused, nothing erased
    r = await client.post(
        "/me/forget",
        data={"csrf": csrf.group(1), "confirm": "FORGET"},
        headers={"Origin": "http://memgate.test"},
    )
    assert r.status_code == 403 and "forbidden" in r.text
    facts = await client.get(f"/v1/users/{A}/facts?status=active", headers=t.h())
    assert len(facts.json()["items"]) == 2


async def test_the_session_ends_with_its_token(client: httpx.AsyncClient, tenant: Tenant) -> None:
    await sign_in(client, await link(client, tenant, ttl_seconds=120))
    assert "Facts about me" in (await client.get("/me")).text
    later = (datetime.now(UTC) + timedelta(seconds=300)).isoformat()
    expired = await client.get("/me", headers={"X-Memgate-Now": later})
    assert "You are not signed in" in expired.text
    r = await client.post("/me/logout", data={"csrf": "x"}, headers={"X-Memgate-Now": later})
    assert r.status_code == 401


async def test_a_link_from_another_site_reloads_once_same_site(client: httpx.AsyncClient) -> None:
    # the Strict cookie is not sent on a cross-site arrival: one same-site reload sends it
    cross = await client.get("/me", headers={"Sec-Fetch-Site": "cross-site"})
    assert '<meta http-equiv="refresh" content="0;url=/me">' in cross.text
    same = await client.get("/me", headers={"Sec-Fetch-Site": "same-origin"})
    assert "http-equiv" not in same.text and "You are not signed in" in same.text


async def test_link_must_be_a_boolean(client: httpx.AsyncClient, tenant: Tenant) -> None:
    for bad in (0, 1, "true", None):
        r = await client.post(f"/v1/users/{A}/tokens", json={"link": bad}, headers=tenant.h())
        assert r.status_code == 422, bad
