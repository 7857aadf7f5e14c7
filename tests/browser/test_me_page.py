"""The "facts about me" page (GET /me) in a real browser: Debian's Chromium driven by
Playwright, against the live uvicorn (`live` / `http` fixtures: a real loopback socket).
Facts, tokens and candidates are made through the real API; every check reads what the
browser shows, or what the API answers afterwards (docs/isolation.md#the-me-page)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import Live, Tenant

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT = ROOT / "docs" / "me-page.png"
A, B = "u-alice", "u-bob"
SECRET = "Tr0ub4dor&3xq-Zq8"


def fact(statement: str, **kw: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "type": kw.pop("type", "semantic"),
        "statement": statement,
        "source": {
            "kind": kw.pop("kind", "explicit_instruction"),
            "evidence": kw.pop("evidence", None),
            "turn_id": kw.pop("turn_id", None),
        },
    }
    body.update(kw)
    return body


async def write(http: httpx.AsyncClient, t: Tenant, user: str, body: dict[str, Any]) -> str:
    r = await http.post(f"/v1/users/{user}/facts", json=body, headers=t.h())
    assert r.status_code in (200, 201) and "fact" in r.json(), r.text
    return str(r.json()["fact"]["id"])


async def login_link(http: httpx.AsyncClient, t: Tenant, user: str) -> tuple[str, str]:
    r = await http.post(f"/v1/users/{user}/tokens", json={"link": True}, headers=t.h("portal"))
    assert r.status_code == 201, r.text
    out = r.json()
    assert out["login_url"].startswith("/me/login?code=")
    return str(out["login_url"]), str(out["token"])


async def signed_in(
    browser: Any, live: Live, http: httpx.AsyncClient, t: Tenant, user: str, **options: Any
) -> tuple[Any, Any]:
    """A fresh browser context signed in as `user` through a login link: (context, page)."""
    context = await browser.new_context(**{"locale": "en-US", **options})
    page = await context.new_page()
    url, _ = await login_link(http, t, user)
    await open_link(page, live.url + url)
    return context, page


async def open_link(page: Any, url: str) -> Any:
    """Open a sign-in link and press its button (opening alone spends nothing)."""
    landing = await page.goto(url)
    assert landing is not None and landing.status == 200
    async with page.expect_navigation() as signed:
        await page.click("#sign-in button")
    response = await signed.value
    assert response is not None and response.status == 200
    assert page.url.endswith("/me")  # the code left the address bar
    return response


async def csrf_of(page: Any) -> str:
    return str(await page.locator("input[name=csrf]").first.input_value())


async def statements(page: Any) -> list[str]:
    return [s.strip() for s in await page.locator("article.fact .statement").all_text_contents()]


async def active(http: httpx.AsyncClient, t: Tenant, user: str) -> list[str]:
    r = await http.get(f"/v1/users/{user}/facts?status=active", headers=t.h())
    assert r.status_code == 200, r.text
    return [f["statement"] for f in r.json()["items"]]


async def test_sign_in_link_works_once_and_leaves_nothing_in_logs(
    browser: Any, live: Live, http: httpx.AsyncClient, tenant: Tenant
) -> None:
    r = await http.post(f"/v1/users/{A}/tokens", json={}, headers=tenant.h("portal"))
    assert r.json()["login_url"] is None  # opt-in only
    unsigned = await browser.new_context()
    page = await unsigned.new_page()
    response = await page.goto(f"{live.url}/me")
    assert response.status == 200 and await page.locator("h1").text_content() == (
        "You are not signed in"
    )
    await unsigned.close()

    url, _ = await login_link(http, tenant, A)
    context = await browser.new_context(locale="en-US")
    page = await context.new_page()
    response = await open_link(page, live.url + url)
    assert page.url == f"{live.url}/me"
    headers = response.headers
    assert "default-src 'self'" in headers["content-security-policy"]
    assert "frame-ancestors 'none'" in headers["content-security-policy"]
    assert headers["referrer-policy"] == "no-referrer"
    assert headers["x-content-type-options"] == "nosniff"
    assert await page.locator("h1").text_content() == "Facts about me"
    assert A in (await page.locator(".who").text_content() or "")
    (cookie,) = [c for c in await context.cookies() if c["name"] == "memgate_me"]
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/me"
    assert not await page.evaluate("document.cookie.includes('memgate_me')")

    # the link's second use fails clearly, even in another browser
    other = await browser.new_context(locale="en-US")
    page2 = await other.new_page()
    response = await page2.goto(live.url + url)
    assert response.status == 400
    assert await page2.locator("#error-code").text_content() == "login_link_invalid"
    assert not [c for c in await other.cookies() if c["name"] == "memgate_me"]
    # a made-up code too
    response = await page2.goto(f"{live.url}/me/login?code={'x' * 43}")
    assert response.status == 400

    # sign out ends the session on the server, not only in this browser
    sid = cookie["value"]
    await page.click("text=Sign out")
    await page.wait_for_url(lambda u: "done=signed_out" in u)
    assert await page.locator("h1").text_content() == "You are not signed in"
    await other.add_cookies([{**cookie, "sameSite": "Strict"}])
    await page2.goto(f"{live.url}/me")
    assert await page2.locator("h1").text_content() == "You are not signed in"

    code = url.split("code=")[1]
    log = live.log_text()
    assert code not in log and sid not in log
    await context.close()
    await other.close()


async def test_page_shows_own_facts_only_two_users_two_tenants(
    browser: Any, live: Live, http: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
) -> None:
    await http.put(
        "/v1/admin/policy", json={"sensitive": {"ask_user": True}}, headers=tenant.h("admin")
    )
    await write(
        http,
        tenant,
        A,
        fact(
            "用户对花生过敏",
            predicate="allergy",
            value="花生",
            evidence="记住我对花生过敏",
            turn_id="t-12",
        ),
    )
    await write(
        http,
        tenant,
        A,
        fact(
            "The user prefers answers as tables",
            predicate="reply_format",
            value="table",
            evidence="please always answer with a table",
        ),
    )
    await write(
        http,
        tenant,
        A,
        fact("The user's name is Alice", type="profile", predicate="name", value="Alice"),
    )
    await write(
        http,
        tenant,
        A,
        fact(
            "I went to a pottery class last Saturday",
            type="episodic",
            kind="user_message",
            occurred_at="2026-11-28T18:00:00Z",
        ),
    )
    r = await http.post(
        f"/v1/users/{A}/facts",
        json=fact(
            "用户有高血压", kind="user_message", predicate="health_condition", value="高血压"
        ),
        headers=tenant.h(),
    )
    assert r.status_code == 202, r.text
    bob = await write(
        http,
        tenant,
        B,
        fact("The user works as a sailing instructor", predicate="job", value="sailing instructor"),
    )
    elsewhere = await write(
        http, other_tenant, A, fact("The user loves opera arias", predicate="music", value="opera")
    )

    context, page = await signed_in(
        browser, live, http, tenant, A, viewport={"width": 960, "height": 900}
    )
    shown = await statements(page)
    assert {
        "用户对花生过敏",
        "The user prefers answers as tables",
        "The user's name is Alice",
    } <= set(shown)
    assert "I went to a pottery class last Saturday" in shown
    assert "用户有高血压" in shown  # the pending candidate, in its own section
    html = await page.content()
    assert "sailing" not in html and "opera" not in html
    assert bob not in html and elsewhere not in html
    # grouped by type, each with its fields
    assert await page.locator("#g-profile").count() == 1
    assert await page.locator("#g-episodic").count() == 1
    allergy = page.locator("article.fact", has_text="用户对花生过敏")
    text = await allergy.locator("dl").text_content() or ""
    for label in ("Value", "Source", "Evidence", "Learned", "Confidence", "Scope", "Freshness"):
        assert label in text
    assert "记住我对花生过敏" in text and "t-12" in text and "global" in text and "fresh" in text
    # every field is labelled, every action is a real button
    unlabelled = await page.evaluate(
        """[...document.querySelectorAll('input:not([type=hidden]), textarea')]
             .filter(e => !document.querySelector(`label[for="${e.id}"]`)).length"""
    )
    assert unlabelled == 0
    await page.screenshot(path=str(SCREENSHOT), full_page=True)

    # another user's fact (same tenant) and another tenant's: 404 on every page route
    csrf = await csrf_of(page)
    for foreign in (bob, elsewhere):
        response = await page.goto(f"{live.url}/me/facts/{foreign}")
        assert response.status == 404
        assert await page.locator("#error-code").text_content() == "not_found"
        for action in ("delete", "correct"):
            r2 = await page.request.post(
                f"{live.url}/me/facts/{foreign}/{action}",
                form={"csrf": csrf, "statement": "hijacked"},
                max_redirects=0,
            )
            assert r2.status == 404, action
    r = await http.post(
        f"/v1/users/{B}/facts",
        json=fact(
            "用户有糖尿病", kind="user_message", predicate="health_condition", value="糖尿病"
        ),
        headers=tenant.h(),
    )
    bob_candidate = r.json()["candidate"]
    for action in ("confirm", "reject"):
        r2 = await page.request.post(
            f"{live.url}/me/candidates/{bob_candidate}/{action}",
            form={"csrf": csrf},
            max_redirects=0,
        )
        assert r2.status == 404, action
    r = await http.get(f"/v1/users/{B}/candidates", headers=tenant.h())
    assert [c["status"] for c in r.json()["items"]] == ["pending"]
    assert await active(http, tenant, B) == ["The user works as a sailing instructor"]
    assert await active(http, other_tenant, A) == ["The user loves opera arias"]
    await context.close()


async def test_correct_accepted_and_refused_then_history(
    browser: Any, live: Live, http: httpx.AsyncClient, tenant: Tenant
) -> None:
    fid = await write(
        http,
        tenant,
        A,
        fact("The user prefers answers as tables", predicate="reply_format", value="table"),
    )
    context, page = await signed_in(browser, live, http, tenant, A)
    card = page.locator(f"#fact-{fid}")
    await card.locator("summary").click()
    await card.get_by_label("Statement").fill("The user prefers answers as bullet lists")
    await card.get_by_label("Value").fill("bullet list")
    await card.get_by_role("button", name="Save correction").click()
    await page.wait_for_url(lambda u: "done=corrected" in u)
    flash = await page.locator("#flash").text_content() or ""
    assert "Your correction" in flash and "refused" not in flash
    assert "The user prefers answers as bullet lists" in await statements(page)
    assert "The user prefers answers as tables" not in await statements(page)
    assert await active(http, tenant, A) == ["The user prefers answers as bullet lists"]

    # a refused correction: the gate's decision and reason, and the secret is not echoed
    (new_id,) = [
        f["id"]
        for f in (await http.get(f"/v1/users/{A}/facts?status=active", headers=tenant.h())).json()[
            "items"
        ]
    ]
    card = page.locator(f"#fact-{new_id}")
    await card.locator("summary").click()
    await card.get_by_label("Statement").fill(f"My bank password is {SECRET}")
    await card.get_by_role("button", name="Save correction").click()
    await page.wait_for_url(lambda u: "done=corrected" in u)
    flash = await page.locator("#flash").text_content() or ""
    assert "refused by the memory gate" in flash and "secret_detected" in flash
    assert SECRET not in await page.content() and SECRET not in page.url
    assert await active(http, tenant, A) == ["The user prefers answers as bullet lists"]

    # history: both versions, oldest first
    await card.get_by_role("link", name="History").click()
    await page.wait_for_url(f"**/me/facts/{new_id}")
    versions = [s.strip() for s in await page.locator(".version .statement").all_text_contents()]
    assert versions == [
        "The user prefers answers as tables",
        "The user prefers answers as bullet lists",
    ]
    assert "superseded" in (await page.locator(".versions").text_content() or "")
    await context.close()


async def test_delete_stays_deleted(
    browser: Any, live: Live, http: httpx.AsyncClient, tenant: Tenant
) -> None:
    statement = "The user is vegetarian"
    fid = await write(http, tenant, A, fact(statement, predicate="diet", value="vegetarian"))
    keep = await write(
        http, tenant, A, fact("The user lives in Lyon", predicate="city", value="Lyon")
    )
    context, page = await signed_in(browser, live, http, tenant, A)
    await page.locator(f"#fact-{fid}").get_by_role("button", name="Delete").click()
    await page.wait_for_url(lambda u: "done=deleted" in u)
    assert statement not in await statements(page)
    await page.reload()
    assert statement not in await statements(page)
    assert await page.locator(f"#fact-{keep}").count() == 1
    # the same statement again through the API: the user's tombstone refuses it
    r = await http.post(
        f"/v1/users/{A}/facts",
        json=fact(statement, kind="user_message", predicate="diet", value="vegetarian"),
        headers=tenant.h(),
    )
    assert r.json()["decision"] == "rejected" and r.json()["reason"] == "tombstoned", r.text
    await page.reload()
    assert statement not in await statements(page)
    response = await page.goto(f"{live.url}/me/facts/{fid}")
    assert response.status == 404
    await context.close()


async def test_candidate_confirm_and_reject(
    browser: Any, live: Live, http: httpx.AsyncClient, tenant: Tenant
) -> None:
    await http.put(
        "/v1/admin/policy", json={"sensitive": {"ask_user": True}}, headers=tenant.h("admin")
    )
    pending = {}
    for text in ("用户有高血压", "用户有哮喘"):
        r = await http.post(
            f"/v1/users/{A}/facts",
            json=fact(text, kind="user_message", predicate="health_condition", value=text),
            headers=tenant.h(),
        )
        assert r.status_code == 202, r.text
        pending[text] = r.json()["candidate"]
    context, page = await signed_in(browser, live, http, tenant, A)
    assert await page.locator("#candidates article").count() == 2
    held = await page.locator(f"#cand-{pending['用户有高血压']}").text_content() or ""
    assert "sensitive and needs your consent" in held
    await (
        page.locator(f"#cand-{pending['用户有高血压']}")
        .get_by_role("button", name="Yes, keep it")
        .click()
    )
    await page.wait_for_url(lambda u: "done=confirmed" in u)
    assert "Your confirmation was saved." in (await page.locator("#flash").text_content() or "")
    assert await page.locator("section.group article", has_text="用户有高血压").count() == 1
    await (
        page.locator(f"#cand-{pending['用户有哮喘']}")
        .get_by_role("button", name="No, forget it")
        .click()
    )
    await page.wait_for_url(lambda u: "done=rejected" in u)
    assert await page.locator("#candidates article").count() == 0
    assert await active(http, tenant, A) == ["用户有高血压"]
    r = await http.get(f"/v1/users/{A}/candidates", headers=tenant.h())
    states = {c["statement"]: c["status"] for c in r.json()["items"]}
    assert states == {"用户有高血压": "promoted", "用户有哮喘": "rejected"}
    await context.close()


async def test_export_download_holds_only_this_user(
    browser: Any, live: Live, http: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
) -> None:
    await write(
        http, tenant, A, fact("The user likes green tea", predicate="drink", value="green tea")
    )
    await write(http, tenant, B, fact("Bob likes black coffee", predicate="drink", value="coffee"))
    await write(http, other_tenant, A, fact("Other tenant: likes mate", predicate="drink"))
    context, page = await signed_in(browser, live, http, tenant, A)
    async with page.expect_download() as info:
        await page.click("#export")
    download = await info.value
    assert download.suggested_filename == f"memgate-export-{A}.json"
    data = json.loads(Path(await download.path()).read_text(encoding="utf-8"))  # noqa: ASYNC240
    assert data["user_id"] == A
    assert [f["statement"] for f in data["facts"]] == ["The user likes green tea"]
    text = json.dumps(data, ensure_ascii=False)
    assert "coffee" not in text and "mate" not in text and B not in text
    await context.close()


async def test_forget_me_needs_the_typed_word_and_ends_the_session(
    browser: Any, live: Live, http: httpx.AsyncClient, tenant: Tenant
) -> None:
    await write(http, tenant, A, fact("The user likes hiking", predicate="hobby", value="hiking"))
    await write(http, tenant, B, fact("Bob likes chess", predicate="hobby", value="chess"))
    context, page = await signed_in(browser, live, http, tenant, A)
    await page.get_by_label("Type FORGET to confirm").fill("yes")
    await page.get_by_role("button", name="Erase everything about me").click()
    await page.wait_for_load_state()
    assert await page.locator("#error-code").text_content() == "confirmation_mismatch"
    assert await active(http, tenant, A) == ["The user likes hiking"]

    await page.goto(f"{live.url}/me")
    await page.get_by_label("Type FORGET to confirm").fill("FORGET")
    await page.get_by_role("button", name="Erase everything about me").click()
    await page.wait_for_url(lambda u: "done=forgotten" in u)
    assert await page.locator("h1").text_content() == "You are not signed in"
    assert "erased" in (await page.locator("#flash").text_content() or "")
    assert await active(http, tenant, A) == []
    assert await active(http, tenant, B) == ["Bob likes chess"]
    await page.goto(f"{live.url}/me")
    assert await page.locator("h1").text_content() == "You are not signed in"
    await context.close()


async def test_post_without_csrf_token_or_from_another_site_is_refused(
    browser: Any, live: Live, http: httpx.AsyncClient, tenant: Tenant
) -> None:
    fid = await write(http, tenant, A, fact("The user plays the cello", predicate="instrument"))
    context, page = await signed_in(browser, live, http, tenant, A)
    csrf = await csrf_of(page)
    url = f"{live.url}/me/facts/{fid}/delete"
    attempts: list[dict[str, Any]] = [
        {"form": {}},
        {"form": {"csrf": "0" * 64}},
        {"form": {"csrf": csrf}, "headers": {"Origin": "http://evil.example"}},
        {"form": {"csrf": csrf}, "headers": {"Sec-Fetch-Site": "cross-site"}},
        {"data": json.dumps({"csrf": csrf}), "headers": {"Content-Type": "application/json"}},
    ]
    for attempt in attempts:
        r = await page.request.post(url, max_redirects=0, **attempt)
        assert r.status == 403, attempt
        assert "csrf_failed" in await r.text()
    forget = await page.request.post(f"{live.url}/me/forget", form={"confirm": "FORGET"})
    assert forget.status == 403
    assert await active(http, tenant, A) == ["The user plays the cello"]
    # without a session at all: 401, nothing changed
    anonymous = await browser.new_context()
    r = await anonymous.request.post(url, form={"csrf": csrf}, max_redirects=0)
    assert r.status == 401
    await anonymous.close()
    # the page's own form still works
    r = await page.request.post(url, form={"csrf": csrf}, max_redirects=0)
    assert r.status == 303
    assert await active(http, tenant, A) == []
    await context.close()


async def test_zh_page_and_language_switch(
    browser: Any, live: Live, http: httpx.AsyncClient, tenant: Tenant
) -> None:
    await write(http, tenant, A, fact("用户喜欢喝乌龙茶", predicate="drink", value="乌龙茶"))
    context, page = await signed_in(browser, live, http, tenant, A, locale="zh-CN")
    assert await page.get_attribute("html", "lang") == "zh"
    assert await page.locator("h1").text_content() == "关于我的记忆"
    body = await page.locator("main").text_content() or ""
    for word in ("偏好与事实", "来源", "置信度", "新鲜度", "忘记我", "下载我的数据", "你明确说过"):
        assert word in body
    assert "Facts about me" not in body and "Confidence" not in body
    await page.get_by_role("link", name="English").click()
    await page.wait_for_url(f"{live.url}/me")
    assert await page.get_attribute("html", "lang") == "en"
    assert await page.locator("h1").text_content() == "Facts about me"
    await page.get_by_role("link", name="中文").click()
    await page.wait_for_url(f"{live.url}/me")
    assert await page.get_attribute("html", "lang") == "zh"
    await page.get_by_label("输入“忘记我”以确认").fill("不")
    await page.get_by_role("button", name="清除关于我的一切").click()
    await page.wait_for_load_state()
    assert "请按提示准确输入确认词" in (await page.locator("main").text_content() or "")
    await context.close()


async def test_phone_width_layout_and_keyboard(
    browser: Any, live: Live, http: httpx.AsyncClient, tenant: Tenant
) -> None:
    await write(
        http,
        tenant,
        A,
        fact(
            "The user wants replies in a numbered list with a short summary first",
            predicate="reply_format",
            value={"style": "numbered", "summary_first": True},
            evidence="I always want a numbered list, and a one-line summary first",
        ),
    )
    context, page = await signed_in(
        browser, live, http, tenant, A, viewport={"width": 375, "height": 812}, is_mobile=True
    )
    width = await page.evaluate("document.documentElement.scrollWidth")
    assert width <= 375, f"the page scrolls sideways at 375 px: {width}"
    for selector in ("article.fact", "#forget-confirm", "button.danger"):
        box = await page.locator(selector).first.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 375, selector
    # keyboard: the correction form opens and submits without a mouse
    summary = page.locator("article.fact summary").first
    await summary.focus()
    await page.keyboard.press("Enter")
    textarea = page.locator("article.fact textarea").first
    assert await textarea.is_visible()
    await textarea.focus()
    await page.keyboard.press("Tab")
    focused = await page.evaluate("document.activeElement.name")
    assert focused == "value"
    await context.close()


async def test_unknown_fact_id_and_bad_id(
    browser: Any, live: Live, http: httpx.AsyncClient, tenant: Tenant
) -> None:
    context, page = await signed_in(browser, live, http, tenant, A)
    response = await page.goto(f"{live.url}/me/facts/{uuid.uuid4()}")
    assert response.status == 404
    response = await page.goto(f"{live.url}/me/facts/not-a-uuid")
    assert response.status == 422
    assert await page.locator("#error-code").text_content() == "invalid_request"
    await context.close()
