"""Dedupe through the API: statements that differ in one number, name or code are both kept;
true near-duplicates still merge (docs/conflicts.md#deduplication free statements,
app.memory.dedupe)."""

from __future__ import annotations

import uuid

import httpx
import pytest

from tests.conftest import Tenant

DISTINCT_PAIRS = [
    # (a locker's code word is a secret since gate round 9: "the code word is …")
    ("my favourite paint colour is amber", "my favourite paint colour is cobalt"),
    ("我的储物柜密码词是琥珀", "我的储物柜密码词是钴蓝"),
    ("my flight is LH 452", "my flight is LH 457"),
    ("my dentist is Dr. Alvarez", "my dentist is Dr. Romero"),
    ("我住在302室", "我住在305室"),
    # ("我的工号是A1023" is held for consent since gate round 14's refit: semantic_personal
    # 0.853 against 0.85, docs/gate.md "Round 14")
    ("我的员工编号是A1023", "我的员工编号是A1024"),
]
NEAR_DUPLICATES = [
    (
        "The user has a team standup every weekday at 10am",
        "Every weekday at 10am the user has a team standup",
    ),
    ("用户的工位在三楼东侧", "用户工位在三楼东侧"),
    ("用户每天早上都喝咖啡", "用户每天早上喝咖啡"),
]


def _fact(statement: str) -> dict[str, object]:
    return {"type": "semantic", "statement": statement, "source": {"kind": "user_message"}}


async def _active(client: httpx.AsyncClient, t: Tenant, user: str) -> list[str]:
    r = await client.get(f"/v1/users/{user}/facts", params={"status": "active"}, headers=t.h())
    assert r.status_code == 200
    return sorted(f["statement"] for f in r.json()["items"])


async def _lower_threshold(client: httpx.AsyncClient, t: Tenant) -> None:
    # With the threshold this low, similarity alone would merge every pair: what keeps
    # them apart is the informative-token rule.
    r = await client.put(
        "/v1/admin/policy", json={"recall": {"dedupe_similarity": 0.3}}, headers=t.h("admin")
    )
    assert r.status_code == 200


@pytest.mark.parametrize("lowered", [False, True], ids=["default_threshold", "low_threshold"])
async def test_one_number_name_or_code_apart_both_kept(
    client: httpx.AsyncClient, tenant: Tenant, lowered: bool
) -> None:
    if lowered:
        await _lower_threshold(client, tenant)
    for a, b in DISTINCT_PAIRS:
        user = f"u-{uuid.uuid4().hex[:8]}"
        first = await client.post(f"/v1/users/{user}/facts", json=_fact(a), headers=tenant.h())
        second = await client.post(f"/v1/users/{user}/facts", json=_fact(b), headers=tenant.h())
        assert (first.status_code, first.json()["decision"]) == (201, "written"), a
        assert (second.status_code, second.json()["decision"]) == (201, "written"), b
        assert await _active(client, tenant, user) == sorted([a, b])


@pytest.mark.parametrize("lowered", [False, True], ids=["default_threshold", "low_threshold"])
async def test_near_duplicates_still_merge(
    client: httpx.AsyncClient, tenant: Tenant, lowered: bool
) -> None:
    if lowered:
        await _lower_threshold(client, tenant)
    for a, b in NEAR_DUPLICATES:
        user = f"u-{uuid.uuid4().hex[:8]}"
        first = await client.post(f"/v1/users/{user}/facts", json=_fact(a), headers=tenant.h())
        second = await client.post(f"/v1/users/{user}/facts", json=_fact(b), headers=tenant.h())
        assert first.json()["decision"] == "written"
        assert (second.status_code, second.json()["decision"]) == (200, "merged"), b
        assert await _active(client, tenant, user) == [a]
