"""The idle-session sweep (docs/sessions.md#turns-and-slots): sessions idle for the tenant's
`session.idle_minutes` are closed into a summary + resume hint, never lost to a TTL.

Safe with several workers: each session is closed under its Redis claim (SET NX), the
same one `POST /v1/sessions/{sid}/close` takes, so a session is summarized once. A claim
held elsewhere is skipped; the session stays in the open set for the next tick.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any, cast

from arq import cron
from arq.cron import CronJob
from arq.typing import WorkerCoroutine

from app import clock
from app.context import AppContext
from app.session.closing import SessionBusy, close_session
from app.session.store import SessionStore
from app.store.db import tenant_ids, tenant_tx
from app.writer import SYSTEM_RIGHTS

log = logging.getLogger("memgate.sessions")

BATCH = 200


async def sweep_idle_sessions(app: AppContext, now: datetime) -> int:
    """Close every session idle at `now`; returns how many this call closed."""
    store = SessionStore(app.sessions)
    closed = 0
    for tid in await tenant_ids(app.pool):
        async with tenant_tx(app.pool, tid) as conn:
            policy = await app.policies.get(conn, tid)
        before = now - timedelta(minutes=policy.session.idle_minutes)
        skipped: set[str] = set()
        while True:
            sids = [
                s for s in await store.idle(tid, before, BATCH + len(skipped)) if s not in skipped
            ]
            if not sids:
                break
            for sid in sids:
                try:
                    result = await close_session(
                        app,
                        tid,
                        sid,
                        SYSTEM_RIGHTS,
                        now,
                        trigger="idle",
                        actor_role="system",
                        wait=False,
                    )
                except SessionBusy:
                    skipped.add(sid)  # another worker is closing it
                    continue
                except Exception:  # one bad session must not stop the sweep
                    log.exception("closing idle session %s of tenant %s failed", sid, tid)
                    skipped.add(sid)
                    continue
                if result is None or result.already_closed:
                    # data gone (forget-me raced us) or closed elsewhere: drop the entry
                    await store.drop_open(tid, sid)
                else:
                    closed += 1
    return closed


async def _cron_sweep(ctx: dict[str, Any]) -> int:
    return await sweep_idle_sessions(ctx["app"], clock.now())


def cron_jobs(timeout_s: int = 600) -> list[CronJob]:
    """Every minute, staggered from the maintenance sweeps; one run per tick."""
    return [
        cron(
            cast(WorkerCoroutine, _cron_sweep),
            name="memgate:sweep:idle_sessions",
            unique=True,
            timeout=timeout_s,
            second=50,
        )
    ]
