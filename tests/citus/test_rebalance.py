"""A third worker joins and the shards rebalance onto it while clients write and recall
(docs/scaling.md#adding-a-worker).

Over a live socket: a real uvicorn (`live`/`http`) against the session's Citus cluster. The
worker is added to that cluster for good, so this module runs last (`make test-citus`
names it last). Checks: no request fails while shards move, shards did move, and the
facts in the database are exactly the ones whose write was answered, each once.
"""

from __future__ import annotations

import asyncio
import uuid

import asyncpg
import httpx

from tests.conftest import Stack, Tenant

USER = "u-rebalance"


async def _client_loop(
    http: httpx.AsyncClient,
    t: Tenant,
    stop: asyncio.Event,
    written: list[str],
    errors: list[str],
    rounds: list[int],
) -> None:
    i = 0
    while not stop.is_set():
        statement = f"Rebalance note {i}: the locker code is {uuid.uuid4().hex[:10]}"
        body = {"type": "semantic", "statement": statement, "source": {"kind": "user_message"}}
        w = await http.post(f"/v1/users/{USER}/facts", json=body, headers=t.h())
        if w.status_code == 201 and w.json()["decision"] == "written":
            written.append(w.json()["fact"]["id"])
        elif w.status_code not in (200, 201):  # 200: merged into an earlier note
            errors.append(f"write {w.status_code} {w.text[:200]}")
        r = await http.post(
            f"/v1/users/{USER}/recall", json={"query": "locker code"}, headers=t.h()
        )
        if r.status_code != 200:
            errors.append(f"recall {r.status_code} {r.text[:200]}")
        i += 1
        rounds[0] += 1


async def _more_rounds(rounds: list[int], target: int) -> None:
    while rounds[0] < target:  # noqa: ASYNC110 - a counter the loops bump, no event to wait on
        await asyncio.sleep(0.05)


async def test_a_third_worker_takes_shards_while_clients_write_and_recall(
    http: httpx.AsyncClient, tenant_factory: object, stack: Stack, owner_db: asyncpg.Pool
) -> None:
    assert stack.embedded is not None and stack.embedded.citus
    tenants: list[Tenant] = [await tenant_factory() for _ in range(4)]  # type: ignore[operator]
    stop = asyncio.Event()
    written: dict[uuid.UUID, list[str]] = {t.id: [] for t in tenants}
    errors: list[str] = []
    rounds = [0]
    loops = [
        asyncio.create_task(_client_loop(http, t, stop, written[t.id], errors, rounds))
        for t in tenants
    ]
    try:
        node = await asyncio.to_thread(stack.embedded.add_citus_worker)
        async with owner_db.acquire() as conn:
            before = rounds[0]
            await conn.execute("SELECT citus_rebalance_start()")
            await conn.execute("SELECT citus_rebalance_wait()")
            moved = await conn.fetchval(
                "SELECT count(*) FROM pg_dist_placement p JOIN pg_dist_node n"
                " ON n.groupid = p.groupid WHERE n.nodeport = $1",
                node.port,
            )
            state = await conn.fetchval(
                "SELECT state::text FROM citus_rebalance_status() ORDER BY job_id DESC LIMIT 1"
            )
        during = rounds[0] - before
        # and the clients go on on the new layout: every loop one more round
        await _more_rounds(rounds, rounds[0] + len(tenants))
    finally:
        stop.set()
        await asyncio.gather(*loops)
    assert errors == []
    assert state == "finished"
    assert moved > 0, "no shard moved to the new worker"
    assert during > 0, "no client request ran while the shards moved"
    async with owner_db.acquire() as conn:
        for t in tenants:
            rows = await conn.fetch(
                "SELECT id::text AS id, statement FROM facts WHERE tenant_id = $1 AND user_id = $2",
                t.id,
                USER,
            )
            ids = [r["id"] for r in rows]
            assert len(ids) == len(set(ids))
            assert sorted(ids) == sorted(written[t.id]), "lost or unanswered facts"
            statements = [r["statement"] for r in rows]
            assert len(statements) == len(set(statements)), "a write landed twice"
