"""The webhook dispatcher (docs/webhooks.md#delivery): delivers the outbox rows the write
paths left in webhook_deliveries.

Runs as a background task in every worker, like the relay. Each pass finds deliveries due
now (across tenants, ids only), claims them in their tenant's transaction with FOR UPDATE
SKIP LOCKED (two dispatchers never take the same row) and a lease (a dispatcher killed
mid-attempt leaves the row due again when the lease ends), then POSTs each one signed,
outside any transaction. A 2xx marks it delivered; anything else (a status, a timeout, a
refused host) reschedules it with exponential backoff and jitter, until `max_attempts`
attempts are spent: then it is dead, for an admin to read and replay. At least once: a
receiver may see a message twice, always with the same `webhook-id`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import uuid
from collections import defaultdict
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import httpx
import orjson

from app import clock
from app.context import AppContext
from app.memory.webhooks import (
    error_code,
    message_id,
    pinned_target,
    retry_delay_s,
    signature_header,
)
from app.services.webhooks import Resolver, checked_address, system_resolve, unseal
from app.store import webhooks as store
from app.store.db import system_conn, tenant_tx

log = logging.getLogger("memgate.webhooks")

BATCH = 100
CONCURRENCY = 8
RETRY_CAP_S = 6 * 3600.0
LEASE_MARGIN_S = 30.0


class Dispatcher:
    def __init__(
        self,
        app: AppContext,
        *,
        interval_s: float | None = None,
        max_attempts: int | None = None,
        retry_base_s: float | None = None,
        timeout_s: float | None = None,
        resolve: Resolver = system_resolve,
    ) -> None:
        settings = app.settings
        self.resolve = resolve
        self.app = app
        self.interval_s = interval_s if interval_s is not None else settings.webhook_interval_s
        self.max_attempts = max_attempts or settings.webhook_max_attempts
        self.retry_base_s = retry_base_s or settings.webhook_retry_base_s
        self.timeout_s = timeout_s or settings.webhook_timeout_s
        self._task: asyncio.Task[None] | None = None
        self._client: httpx.AsyncClient | None = None

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            # No redirects: a 3xx to a private host must not get around the URL check.
            # No keep-alive: httpx pools connections by scheme, address and port, so a
            # connection opened (and its certificate checked) for one endpoint's name
            # would carry another endpoint's deliveries to the same address unchecked.
            # No proxy from the environment: through a proxy the pinned address would
            # become the TLS name, and NO_PROXY would stop matching the endpoint's name.
            self._client = httpx.AsyncClient(
                timeout=self.timeout_s,
                follow_redirects=False,
                trust_env=False,
                limits=httpx.Limits(max_keepalive_connections=0),
            )
        return self._client

    async def run_once(self, now: datetime | None = None) -> int:
        """One pass: deliveries due at `now` (default the clock's), each attempted once.
        Returns how many were attempted."""
        now = now or clock.now()
        async with system_conn(self.app.pool) as conn:
            due = await store.due(conn, now, BATCH)
        by_tenant: dict[uuid.UUID, list[uuid.UUID]] = defaultdict(list)
        for row in due:
            by_tenant[row["tenant_id"]].append(row["id"])
        lease_until = now + timedelta(seconds=self.timeout_s + LEASE_MARGIN_S)
        claimed: list[tuple[uuid.UUID, Any]] = []
        for tid, ids in by_tenant.items():
            async with tenant_tx(self.app.pool, tid) as conn:
                rows = await store.claim(conn, tid, ids, now, lease_until)
            claimed.extend((tid, r) for r in rows)
        gate = asyncio.Semaphore(CONCURRENCY)

        async def one(tid: uuid.UUID, row: Any) -> None:
            async with gate:
                await self._attempt(tid, row, now)

        await asyncio.gather(*(one(tid, r) for tid, r in claimed))
        return len(claimed)

    async def _attempt(self, tid: uuid.UUID, row: Any, now: datetime) -> None:
        status, exc = await self._post(tid, row)
        attempts = int(row["attempts"])
        if status is not None and 200 <= status < 300:
            state, error, next_at = "delivered", None, now
        else:
            error = error_code(status, exc)
            if attempts >= self.max_attempts:
                state, next_at = "dead", now
            else:
                state = "pending"
                delay = retry_delay_s(attempts, self.retry_base_s, RETRY_CAP_S, random.random())
                next_at = now + timedelta(seconds=delay)
            log.warning(
                "webhook delivery %s attempt %d: %s%s",
                row["id"],
                attempts,
                error,
                " (dead)" if state == "dead" else "",
            )
        async with tenant_tx(self.app.pool, tid) as conn:
            await store.record_attempt(
                conn,
                tid,
                row["id"],
                clock.now(),
                state=state,
                next_attempt_at=next_at,
                status=status,
                error=error,
            )

    async def _post(self, tid: uuid.UUID, row: Any) -> tuple[int | None, BaseException | None]:
        """(the receiver's status, or the exception that stopped the request)."""
        endpoint_id = row["endpoint_id"]
        try:
            parts = urlsplit(row["url"])
            address, refused = await checked_address(
                self.app.settings, parts.hostname or "", parts.port, self.resolve
            )
            if address is None:  # the host resolves elsewhere since it was registered
                return None, ConnectionRefusedError(refused)
            url, pin_headers, extensions = pinned_target(row["url"], address)
            sealed = [row["secret_enc"], row["previous_secret_enc"]]
            secrets = [unseal(self.app.secret, tid, endpoint_id, s) for s in sealed if s]
            body = orjson.dumps(row["payload"])
            msg_id = message_id(row["id"])
            timestamp = int(clock.now().timestamp())
            headers = {
                **pin_headers,
                "content-type": "application/json",
                "user-agent": "memgate-webhooks/1",
                "webhook-id": msg_id,
                "webhook-timestamp": str(timestamp),
                "webhook-signature": signature_header(secrets, msg_id, timestamp, body),
            }
            # the timeout bounds the whole attempt (httpx's bounds each read, which a
            # receiver sending a byte at a time never trips), and the answer's body is
            # never read: only its status counts
            async with asyncio.timeout(self.timeout_s):
                async with self._http().stream(
                    "POST", url, content=body, headers=headers, extensions=extensions
                ) as res:
                    return res.status_code, None
        except Exception as exc:  # the receiver's problem or the network's: retried
            return None, exc

    async def _loop(self) -> None:
        while True:
            try:
                await self.run_once()
            except Exception:  # a database outage: try again next pass
                log.exception("webhook pass failed")
            await asyncio.sleep(self.interval_s)

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._loop(), name="memgate-webhooks")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._client is not None:
            await self._client.aclose()
            self._client = None
