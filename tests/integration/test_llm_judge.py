"""The optional LLM judge of borderline semantic scores, through the API (in-process ASGI
transport) against the OpenAI-compatible fake on a loopback socket: a harmful verdict
refuses, a benign one writes, a timeout or a malformed answer holds the write pending
(never written), the judge is asked only when the tenant's policy turns it on, and
content the rules refuse never reaches it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
import httpx
import pytest

from app.context import AppContext
from app.providers.extract_llm import LLMExtractor
from app.providers.judge import LLMJudge
from tests.conftest import Tenant
from tests.fakes.openai_fake import OpenAIFake, Reply

STATEMENT = "I always answer my emails before ten in the morning"


def body(statement: str = STATEMENT) -> dict[str, Any]:
    return {"type": "semantic", "statement": statement, "source": {"kind": "user_message"}}


@pytest.fixture
def ctx(app: Any) -> AppContext:
    c: AppContext = app.state.ctx
    return c


@asynccontextmanager
async def judging(ctx: AppContext) -> AsyncIterator[OpenAIFake]:
    """The API's context with a judge talking to a fresh fake; restored afterwards."""
    with OpenAIFake() as fake:
        judge = LLMJudge(LLMExtractor(base_url=fake.base_url, model="judge-model", max_retries=0))
        before, ctx.judge = ctx.judge, judge
        try:
            yield fake
        finally:
            ctx.judge = before
            await judge.aclose()


async def borderline_policy(client: httpx.AsyncClient, t: Tenant, **judge: Any) -> None:
    """Set this tenant's injection threshold just above STATEMENT's score and turn the
    judge on: the statement is then borderline for this tenant only."""
    res = await client.post("/v1/admin/gate/explain", headers=t.h("admin"), json={"fact": body()})
    assert res.status_code == 200, res.text
    [c] = res.json()["candidates"]
    assert c["decision"] == "pass" and c["semantic"] == "on", c
    score = c["semantic_scores"]["injection"]
    assert score < 0.9, score
    res = await client.put(
        "/v1/admin/policy",
        headers=t.h("admin"),
        json={
            "gate": {
                "semantic": {"injection": round(score + 0.05, 3)},
                # STATEMENT is 0.05 short of the threshold: inside a 0.1 margin, while a
                # clear case (a score near 0) stays outside it whatever the fitted scores
                "judge": {"enabled": True, "margin": 0.1, "timeout_s": 0.5, **judge},
            }
        },
    )
    assert res.status_code == 200, res.text


async def write(
    client: httpx.AsyncClient, t: Tenant, user: str, statement: str = STATEMENT
) -> httpx.Response:
    return await client.post(f"/v1/users/{user}/facts", json=body(statement), headers=t.h())


async def stored(owner_db: asyncpg.Pool, t: Tenant, user: str) -> tuple[int, list[Any]]:
    async with owner_db.acquire() as conn:
        facts = await conn.fetchval(
            "SELECT count(*) FROM facts WHERE tenant_id = $1 AND user_id = $2", t.id, user
        )
        cands = await conn.fetch(
            "SELECT status, reason FROM candidates WHERE tenant_id = $1 AND user_id = $2",
            t.id,
            user,
        )
    return int(facts), [(r["status"], r["reason"]) for r in cands]


async def test_verdicts_refuse_write_or_hold(
    client: httpx.AsyncClient, tenant: Tenant, ctx: AppContext, owner_db: asyncpg.Pool
) -> None:
    await borderline_policy(client, tenant)
    async with judging(ctx) as fake:
        fake.chat_script.append(Reply.chat({"injection": "harmful"}))
        res = await write(client, tenant, "j-harm")
        assert res.status_code == 200, res.text
        out = res.json()
        assert (out["decision"], out["reason"]) == ("rejected", "prompt_injection")
        assert out["detail"]["judge"] == "harmful"
        assert out["detail"]["detector"] == "semantic_injection"
        assert await stored(owner_db, tenant, "j-harm") == (0, [])
        [asked] = fake.chat_requests
        fmt = asked.json["response_format"]
        assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
        schema = fmt["json_schema"]["schema"]
        assert schema["required"] == ["injection"] and schema["additionalProperties"] is False
        data = json.loads(asked.json["messages"][1]["content"])
        assert data["write"]["statement"] == STATEMENT and list(data["classes"]) == ["injection"]

        fake.chat_script.append(Reply.chat({"injection": "benign"}))
        res = await write(client, tenant, "j-ok")
        assert res.status_code == 201, res.text
        assert res.json()["decision"] == "written"
        assert (await stored(owner_db, tenant, "j-ok"))[0] == 1

        # slower than the policy's 0.5 s, out of JSON, out of schema: pending, never written
        for user, reply in [
            ("j-slow", Reply.chat({"injection": "benign"}, delay=2.0)),
            ("j-junk", Reply.chat("not json {")),
            ("j-extra", Reply.chat({"injection": "benign", "note": "trust me"})),
            ("j-enum", Reply.chat({"injection": "fine"})),
            ("j-down", Reply.error(500)),
        ]:
            fake.chat_script.append(reply)
            res = await write(client, tenant, user)
            assert res.status_code == 202, (user, res.text)
            out = res.json()
            assert (out["decision"], out["reason"]) == ("pending", "prompt_injection"), user
            assert out["detail"]["judge"] == "unavailable", user
            assert await stored(owner_db, tenant, user) == (0, [("pending", "prompt_injection")]), (
                user
            )
        assert len(fake.chat_requests) == 7

    async with owner_db.acquire() as conn:
        rows = await conn.fetch(
            "SELECT user_id, detail::text AS d FROM audit_events WHERE tenant_id = $1"
            " AND user_id IN ('j-harm', 'j-slow')",
            tenant.id,
        )
    judged = {r["user_id"]: json.loads(r["d"]).get("judge") for r in rows}
    assert judged["j-harm"] in ("harmful", {"injection": "harmful"})
    assert judged["j-slow"] in ("unavailable", {"injection": "unavailable"})


async def test_the_judge_is_asked_only_when_the_tenant_turns_it_on(
    client: httpx.AsyncClient,
    tenant: Tenant,
    other_tenant: Tenant,
    ctx: AppContext,
    owner_db: asyncpg.Pool,
) -> None:
    await borderline_policy(client, tenant)
    async with judging(ctx) as fake:
        # the other tenant keeps the defaults (judge off): nobody is asked, it is written
        res = await write(client, other_tenant, "j-other")
        assert res.status_code == 201, res.text
        # a clear case needs no judge: nowhere near any threshold
        res = await write(client, tenant, "j-clear", "我喜欢用 Vim 写代码")
        assert res.status_code == 201, res.text
        # what the rules refuse never reaches the judge
        secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
        res = await write(client, tenant, "j-secret", f"{STATEMENT}; aws secret key {secret}")
        assert res.json()["reason"] == "secret_detected", res.text
        assert fake.chat_requests == []
    assert secret not in json.dumps([r.json for r in fake.requests])


async def test_without_an_llm_the_thresholds_decide(
    client: httpx.AsyncClient, tenant: Tenant, ctx: AppContext
) -> None:
    await borderline_policy(client, tenant)
    assert ctx.judge is None  # the test stack has no MEMGATE_LLM_BASE_URL
    res = await write(client, tenant, "j-nollm")
    assert res.status_code == 201, res.text


async def test_bad_judge_policy_is_refused(client: httpx.AsyncClient, tenant: Tenant) -> None:
    for judge in ({"margin": 0.9}, {"timeout_s": 0}, {"enabled": "sometimes"}, {"x": 1}):
        res = await client.put(
            "/v1/admin/policy", headers=tenant.h("admin"), json={"gate": {"judge": judge}}
        )
        assert res.status_code == 422, (judge, res.text)
        assert res.json()["error"]["code"] == "invalid_request", res.text
