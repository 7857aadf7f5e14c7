"""The asynchronous client (the one hand-written client: `make sdk` derives the sync
`Client` from this file). One method per API route, named by what it does; each builds a
`Call` and hands it to `_run`, which sends it through the shared retry exchange."""

from __future__ import annotations

import asyncio
import json as jsonlib
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, Literal, TypeVar
from urllib.parse import quote
from uuid import UUID

import httpx
from pydantic import TypeAdapter

from memgate_client import models as m
from memgate_client._core import Call, RetryPolicy, body, decode, exchange, model
from memgate_client._core import prepare as prepare_attempt

T = TypeVar("T")

_TURN = TypeAdapter(m.TurnAppended | m.TurnRetried)


def _cleanup_answer(response: httpx.Response) -> m.CleanupResult | m.CleanupQueued:
    """200: what a small cleanup did (or would do); 202: a large one queued as a job."""
    if response.status_code == 202:
        return m.CleanupQueued.model_validate_json(response.content)
    return m.CleanupResult.model_validate_json(response.content)


def _seg(value: str | UUID) -> str:
    """A path segment, escaped: an id never reaches another route."""
    return quote(str(value), safe="")


class AsyncClient:
    """memgate over HTTP, asynchronous. `key` is an API key (`mgk_…`) or a user token
    (`mgu_…`, for the `me_*` methods). Use it as a context manager, or call `aclose()`."""

    def __init__(
        self,
        base_url: str,
        key: str,
        *,
        retry: RetryPolicy | None = None,
        timeout: float = 30.0,
        headers: Mapping[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.retry = retry or RetryPolicy()
        self._http = httpx.AsyncClient(
            base_url=base_url.rstrip("/"),
            headers={"Authorization": f"Bearer {key}", **(headers or {})},
            timeout=timeout,
            transport=transport,
        )

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    # ------------------------------------------------------------------ the one send path

    async def _run(self, call: Call[T], idempotency_key: str | None = None) -> T:
        steps = exchange(prepare_attempt(call, idempotency_key), self.retry)
        step = next(steps)
        try:
            while True:
                if isinstance(step, float):
                    await asyncio.sleep(step)
                    step = steps.send(None)
                    continue
                try:
                    response = await self._http.request(
                        step.method,
                        step.path,
                        params=step.params,
                        json=step.json,
                        content=step.content,
                        headers=step.headers,
                    )
                except httpx.TransportError as exc:
                    step = steps.throw(exc)
                    continue
                step = steps.send(response)
        except StopIteration as done:
            final: httpx.Response = done.value
        return decode(call, final)  # outside the except: an error has no StopIteration context

    async def _pages(self, fetch: Callable[[str | None], Call[Any]]) -> AsyncIterator[Any]:
        cursor: str | None = None
        while True:
            page = await self._run(fetch(cursor))
            for item in page.items:
                yield item
            cursor = page.next_cursor
            if cursor is None:
                return

    # ------------------------------------------------------------------------------ facts

    async def write_fact(
        self,
        user_id: str,
        fact: m.FactIn | Mapping[str, Any],
        *,
        idempotency_key: str | None = None,
    ) -> m.WriteResult:
        """An explicit write through the gate: `decision` is written, merged, superseded,
        pending or rejected (a refusal is an answer, not an error)."""
        call = Call(
            "POST", f"/v1/users/{_seg(user_id)}/facts", model(m.WriteResult), json=body(fact)
        )
        return await self._run(call, idempotency_key)

    async def write_facts(
        self,
        user_id: str,
        items: Sequence[m.FactIn | Mapping[str, Any]],
        *,
        dry_run: bool = False,
        idempotency_key: str | None = None,
    ) -> m.FactBatchOut:
        """Up to 500 writes of one user in one transaction, decided in order."""
        payload = {"items": [body(i) for i in items], "dry_run": dry_run}
        call = Call(
            "POST", f"/v1/users/{_seg(user_id)}/facts:batch", model(m.FactBatchOut), json=payload
        )
        return await self._run(call, idempotency_key)

    def _list_facts_call(
        self, user_id: str, filters: Mapping[str, Any], cursor: str | None
    ) -> Call[m.FactPage]:
        params = {**filters, "cursor": cursor}
        return Call("GET", f"/v1/users/{_seg(user_id)}/facts", model(m.FactPage), params=params)

    async def list_facts(
        self,
        user_id: str,
        *,
        scope: str | None = None,
        type: m.FactType | None = None,
        predicate: str | None = None,
        status: Literal["active", "superseded", "archived"] | None = None,
        source_kind: m.SourceKind | None = None,
        as_of: datetime | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> m.FactPage:
        """One page of the user's facts, newest first (`next_cursor` for the next)."""
        filters = {
            "scope": scope,
            "type": type,
            "predicate": predicate,
            "status": status,
            "source_kind": source_kind,
            "as_of": as_of,
            "limit": limit,
        }
        return await self._run(self._list_facts_call(user_id, filters, cursor))

    async def iter_facts(
        self,
        user_id: str,
        *,
        scope: str | None = None,
        type: m.FactType | None = None,
        predicate: str | None = None,
        status: Literal["active", "superseded", "archived"] | None = None,
        source_kind: m.SourceKind | None = None,
        as_of: datetime | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[m.Fact]:
        """Every fact matching the filters, following the cursor page after page."""
        filters = {
            "scope": scope,
            "type": type,
            "predicate": predicate,
            "status": status,
            "source_kind": source_kind,
            "as_of": as_of,
            "limit": limit,
        }
        async for fact in self._pages(lambda c: self._list_facts_call(user_id, filters, c)):
            yield fact

    async def get_fact(self, user_id: str, fact_id: str | UUID) -> m.Fact:
        path = f"/v1/users/{_seg(user_id)}/facts/{_seg(fact_id)}"
        return await self._run(Call("GET", path, model(m.Fact)))

    async def correct_fact(
        self,
        user_id: str,
        fact_id: str | UUID,
        patch: m.FactPatch | Mapping[str, Any],
        *,
        idempotency_key: str | None = None,
    ) -> m.WriteResult:
        """A correction: a new version through the gate, answered like a write."""
        path = f"/v1/users/{_seg(user_id)}/facts/{_seg(fact_id)}"
        return await self._run(
            Call("PATCH", path, model(m.WriteResult), json=body(patch)), idempotency_key
        )

    async def delete_fact(
        self, user_id: str, fact_id: str | UUID, *, idempotency_key: str | None = None
    ) -> m.Deleted:
        path = f"/v1/users/{_seg(user_id)}/facts/{_seg(fact_id)}"
        return await self._run(Call("DELETE", path, model(m.Deleted)), idempotency_key)

    async def fact_history(self, user_id: str, fact_id: str | UUID) -> m.FactPage:
        """The fact's version chain."""
        path = f"/v1/users/{_seg(user_id)}/facts/{_seg(fact_id)}/history"
        return await self._run(Call("GET", path, model(m.FactPage)))

    async def feedback(
        self,
        user_id: str,
        fact_id: str | UUID,
        useful: bool,
        note: str | None = None,
        *,
        idempotency_key: str | None = None,
    ) -> m.FeedbackOut:
        path = f"/v1/users/{_seg(user_id)}/facts/{_seg(fact_id)}/feedback"
        payload: dict[str, Any] = {"useful": useful} | ({"note": note} if note is not None else {})
        return await self._run(
            Call("POST", path, model(m.FeedbackOut), json=payload), idempotency_key
        )

    def _audit_call(self, user_id: str, limit: int | None, cursor: str | None) -> Call[m.AuditPage]:
        path = f"/v1/users/{_seg(user_id)}/audit"
        return Call("GET", path, model(m.AuditPage), params={"limit": limit, "cursor": cursor})

    async def audit(
        self, user_id: str, *, limit: int | None = None, cursor: str | None = None
    ) -> m.AuditPage:
        """The user's audit trail, one page (an ops key)."""
        return await self._run(self._audit_call(user_id, limit, cursor))

    async def iter_audit(
        self, user_id: str, *, limit: int | None = None
    ) -> AsyncIterator[m.AuditEvent]:
        async for event in self._pages(lambda c: self._audit_call(user_id, limit, c)):
            yield event

    # ---------------------------------------------------------------- observations, jobs

    async def observe(
        self,
        user_id: str,
        messages: Sequence[m.MessageIn | Mapping[str, Any]],
        *,
        scope: str | None = None,
        session_id: str | None = None,
        source_kind: str | None = None,
        trace_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> m.Queued:
        """Conversation turns for extraction in the background: poll `get_job(job_id)`."""
        payload = {
            "messages": [body(x) for x in messages],
            "scope": scope,
            "session_id": session_id,
            "source_kind": source_kind,
            "trace_id": trace_id,
        }
        payload = {k: v for k, v in payload.items() if v is not None}
        path = f"/v1/users/{_seg(user_id)}/observations"
        return await self._run(Call("POST", path, model(m.Queued), json=payload), idempotency_key)

    async def get_job(self, job_id: str | UUID) -> m.Job:
        return await self._run(Call("GET", f"/v1/jobs/{_seg(job_id)}", model(m.Job)))

    async def wait_job(
        self, job_id: str | UUID, *, timeout: float = 60.0, interval: float = 0.2
    ) -> m.Job:
        """Poll the job until it is `done` or `failed`; TimeoutError after `timeout` s."""
        deadline = time.monotonic() + timeout
        while True:
            job = await self.get_job(job_id)
            if job.state in ("done", "failed"):
                return job
            if time.monotonic() > deadline:
                raise TimeoutError(f"job {job_id} still {job.state} after {timeout} s")
            await asyncio.sleep(interval)

    # ------------------------------------------------------------------------- candidates

    def _candidates_call(
        self, user_id: str, status: str | None, limit: int | None, cursor: str | None
    ) -> Call[m.CandidatePage]:
        path = f"/v1/users/{_seg(user_id)}/candidates"
        params = {"status": status, "limit": limit, "cursor": cursor}
        return Call("GET", path, model(m.CandidatePage), params=params)

    async def list_candidates(
        self,
        user_id: str,
        *,
        status: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> m.CandidatePage:
        return await self._run(self._candidates_call(user_id, status, limit, cursor))

    async def iter_candidates(
        self, user_id: str, *, status: str | None = None, limit: int | None = None
    ) -> AsyncIterator[m.Candidate]:
        async for c in self._pages(lambda cur: self._candidates_call(user_id, status, limit, cur)):
            yield c

    async def confirm_candidate(
        self, user_id: str, candidate_id: str | UUID, *, idempotency_key: str | None = None
    ) -> m.WriteResult:
        path = f"/v1/users/{_seg(user_id)}/candidates/{_seg(candidate_id)}/confirm"
        return await self._run(Call("POST", path, model(m.WriteResult)), idempotency_key)

    async def reject_candidate(
        self, user_id: str, candidate_id: str | UUID, *, idempotency_key: str | None = None
    ) -> m.Rejected:
        path = f"/v1/users/{_seg(user_id)}/candidates/{_seg(candidate_id)}/reject"
        return await self._run(Call("POST", path, model(m.Rejected)), idempotency_key)

    # ----------------------------------------------------------------------------- recall

    async def recall(
        self,
        user_id: str,
        query: str,
        *,
        budget_tokens: int | None = None,
        k: int | None = None,
        scope: str | None = None,
        session_id: str | None = None,
        types: Sequence[str] | None = None,
        lang: Literal["zh", "en"] | None = None,
        min_score: float | None = None,
        trace_id: str | None = None,
    ) -> m.RecallResult:
        """The few facts that matter for `query`, packed into `budget_tokens`."""
        payload = {
            "query": query,
            "budget_tokens": budget_tokens,
            "k": k,
            "scope": scope,
            "session_id": session_id,
            "types": list(types) if types is not None else None,
            "lang": lang,
            "min_score": min_score,
            "trace_id": trace_id,
        }
        payload = {key: v for key, v in payload.items() if v is not None}
        path = f"/v1/users/{_seg(user_id)}/recall"
        return await self._run(Call("POST", path, model(m.RecallResult), json=payload))

    async def recall_context(
        self,
        user: str,
        query: str,
        budget: int | None = None,
        *,
        scope: str | None = None,
        session_id: str | None = None,
    ) -> str:
        """The memory block for the prompt (recall's `context`, within `budget` tokens;
        empty when nothing is worth injecting)."""
        result = await self.recall(
            user, query, budget_tokens=budget, scope=scope, session_id=session_id
        )
        return result.context

    async def get_trace(self, trace_id: str) -> m.Trace:
        """What a recall injected and why."""
        return await self._run(Call("GET", f"/v1/traces/{_seg(trace_id)}", model(m.Trace)))

    # ------------------------------------------------------------------------- user tokens

    async def mint_token(
        self,
        user_id: str,
        *,
        ttl_seconds: int | None = None,
        link: bool = False,
        idempotency_key: str | None = None,
    ) -> m.Token:
        """A user token (`mgu_…`) for `/v1/me`; it sees no more than this key. A retry of a
        mint whose answer was lost raises IdempotencyConflictError: nothing is minted twice."""
        payload: dict[str, Any] = {}
        if ttl_seconds is not None:
            payload["ttl_seconds"] = ttl_seconds
        if link:
            payload["link"] = True  # also a one-time `login_url` for the /me page
        path = f"/v1/users/{_seg(user_id)}/tokens"
        return await self._run(
            Call("POST", path, model(m.Token), json=payload or None), idempotency_key
        )

    # --------------------------------------------------------------------------- sessions

    async def append_turn(
        self,
        session_id: str,
        user_id: str,
        role: str,
        content: str,
        *,
        scope: str | None = None,
        turn_id: str | None = None,
        trace_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> m.TurnAppended | m.TurnRetried:
        payload = {
            "user_id": user_id,
            "role": role,
            "content": content,
            "scope": scope,
            "turn_id": turn_id,
            "trace_id": trace_id,
        }
        payload = {k: v for k, v in payload.items() if v is not None}
        path = f"/v1/sessions/{_seg(session_id)}/turns"
        call = Call("POST", path, lambda r: _TURN.validate_json(r.content), json=payload)
        return await self._run(call, idempotency_key)

    async def put_slots(self, session_id: str, slots: Mapping[str, Any]) -> m.Slots:
        path = f"/v1/sessions/{_seg(session_id)}/slots"
        return await self._run(Call("PUT", path, model(m.Slots), json=dict(slots)))

    async def get_session(self, session_id: str) -> m.Session:
        return await self._run(Call("GET", f"/v1/sessions/{_seg(session_id)}", model(m.Session)))

    async def close_session(
        self, session_id: str, *, idempotency_key: str | None = None
    ) -> m.Closed:
        path = f"/v1/sessions/{_seg(session_id)}/close"
        return await self._run(Call("POST", path, model(m.Closed)), idempotency_key)

    # ------------------------------------------------------------- /v1/me (a user token)

    def _me_facts_call(
        self, status: str | None, lang: str | None, limit: int | None, cursor: str | None
    ) -> Call[m.MyFactPage]:
        params = {"status": status, "lang": lang, "limit": limit, "cursor": cursor}
        return Call("GET", "/v1/me/facts", model(m.MyFactPage), params=params)

    async def me_facts(
        self,
        *,
        status: str | None = None,
        lang: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> m.MyFactPage:
        return await self._run(self._me_facts_call(status, lang, limit, cursor))

    async def iter_me_facts(
        self, *, status: str | None = None, lang: str | None = None, limit: int | None = None
    ) -> AsyncIterator[m.MyFact]:
        async for fact in self._pages(lambda c: self._me_facts_call(status, lang, limit, c)):
            yield fact

    async def me_correct_fact(
        self,
        fact_id: str | UUID,
        patch: m.FactPatch | Mapping[str, Any],
        *,
        idempotency_key: str | None = None,
    ) -> m.WriteResult:
        path = f"/v1/me/facts/{_seg(fact_id)}"
        return await self._run(
            Call("PATCH", path, model(m.WriteResult), json=body(patch)), idempotency_key
        )

    async def me_delete_fact(
        self, fact_id: str | UUID, *, idempotency_key: str | None = None
    ) -> m.Deleted:
        path = f"/v1/me/facts/{_seg(fact_id)}"
        return await self._run(Call("DELETE", path, model(m.Deleted)), idempotency_key)

    def _me_candidates_call(
        self, status: str | None, limit: int | None, cursor: str | None
    ) -> Call[m.CandidatePage]:
        params = {"status": status, "limit": limit, "cursor": cursor}
        return Call("GET", "/v1/me/candidates", model(m.CandidatePage), params=params)

    async def me_candidates(
        self, *, status: str | None = None, limit: int | None = None, cursor: str | None = None
    ) -> m.CandidatePage:
        return await self._run(self._me_candidates_call(status, limit, cursor))

    async def iter_me_candidates(
        self, *, status: str | None = None, limit: int | None = None
    ) -> AsyncIterator[m.Candidate]:
        async for c in self._pages(lambda cur: self._me_candidates_call(status, limit, cur)):
            yield c

    async def me_confirm_candidate(
        self, candidate_id: str | UUID, *, idempotency_key: str | None = None
    ) -> m.WriteResult:
        path = f"/v1/me/candidates/{_seg(candidate_id)}/confirm"
        return await self._run(Call("POST", path, model(m.WriteResult)), idempotency_key)

    async def me_reject_candidate(
        self, candidate_id: str | UUID, *, idempotency_key: str | None = None
    ) -> m.Rejected:
        path = f"/v1/me/candidates/{_seg(candidate_id)}/reject"
        return await self._run(Call("POST", path, model(m.Rejected)), idempotency_key)

    async def me_export(self) -> m.Export:
        return await self._run(Call("GET", "/v1/me/export", model(m.Export)))

    async def forget_me(self, *, idempotency_key: str | None = None) -> m.Forgotten:
        """Erase everything kept about the token's user (a token minted by an unlimited key)."""
        return await self._run(Call("DELETE", "/v1/me", model(m.Forgotten)), idempotency_key)

    # -------------------------------------------------------------------------------- ops

    async def cleanup(
        self,
        action: Literal["archive", "delete"],
        *,
        filter: m.CleanupFilterIn | Mapping[str, Any] | None = None,
        dry_run: bool = True,
        idempotency_key: str | None = None,
    ) -> m.CleanupResult | m.CleanupQueued:
        """Batch archive/delete by filter (an ops key): a dry run by default; a large one
        answers a job (`CleanupQueued`)."""
        payload: dict[str, Any] = {"action": action, "dry_run": dry_run}
        if filter is not None:
            payload["filter"] = body(filter)
        call = Call("POST", "/v1/ops/cleanup", _cleanup_answer, json=payload)
        return await self._run(call, idempotency_key)

    async def stats(self) -> m.Stats:
        return await self._run(Call("GET", "/v1/ops/stats", model(m.Stats)))

    async def reembed(
        self, *, model_name: str | None = None, idempotency_key: str | None = None
    ) -> m.Queued:
        """Re-embed every fact in the background (an admin key)."""
        payload = {"model": model_name} if model_name is not None else None
        call = Call("POST", "/v1/ops/reembed", model(m.Queued), json=payload)
        return await self._run(call, idempotency_key)

    async def purge(self, *, idempotency_key: str | None = None) -> m.Queued:
        """Purge the tenant's deleted facts now, in the background (an ops key); the job
        reports done/total on `get_job`."""
        return await self._run(Call("POST", "/v1/ops/purge", model(m.Queued)), idempotency_key)

    # ------------------------------------------------------------------------------ admin

    async def get_policy(self) -> m.PolicyOut:
        return await self._run(Call("GET", "/v1/admin/policy", model(m.PolicyOut)))

    async def put_policy(self, overrides: Mapping[str, Any]) -> m.PolicyOut:
        """Replace the tenant's policy overrides (deep-merged over the defaults)."""
        call = Call("PUT", "/v1/admin/policy", model(m.PolicyOut), json=dict(overrides))
        return await self._run(call)

    def _keys_call(self, limit: int | None, cursor: str | None) -> Call[m.ApiKeyPage]:
        params = {"limit": limit, "cursor": cursor}
        return Call("GET", "/v1/admin/keys", model(m.ApiKeyPage), params=params)

    async def list_keys(
        self, *, limit: int | None = None, cursor: str | None = None
    ) -> m.ApiKeyPage:
        return await self._run(self._keys_call(limit, cursor))

    async def iter_keys(self, *, limit: int | None = None) -> AsyncIterator[m.ApiKey]:
        async for key in self._pages(lambda c: self._keys_call(limit, c)):
            yield key

    async def create_key(
        self,
        role: Literal["agent", "ops", "admin"],
        *,
        name: str | None = None,
        scopes: Sequence[str] | None = None,
        max_sensitivity: str | None = None,
        idempotency_key: str | None = None,
    ) -> m.NewApiKey:
        """A new API key; its secret (`key`) is in this answer only. A retry of a create
        whose answer was lost raises IdempotencyConflictError (`details.first.id` names the
        key to revoke): a key is never minted twice."""
        payload: dict[str, Any] = {"role": role}
        if name is not None:
            payload["name"] = name
        if scopes is not None:
            payload["scopes"] = list(scopes)
        if max_sensitivity is not None:
            payload["max_sensitivity"] = max_sensitivity
        call = Call("POST", "/v1/admin/keys", model(m.NewApiKey), json=payload)
        return await self._run(call, idempotency_key)

    async def revoke_key(
        self, key_id: str | UUID, *, idempotency_key: str | None = None
    ) -> m.Revoked:
        path = f"/v1/admin/keys/{_seg(key_id)}"
        return await self._run(Call("DELETE", path, model(m.Revoked)), idempotency_key)

    async def import_facts(
        self,
        lines: bytes | str | Iterable[Mapping[str, Any]],
        *,
        format: Literal["jsonl", "mem0"] = "jsonl",
        dry_run: bool = False,
        idempotency_key: str | None = None,
    ) -> m.ImportQueued:
        """Many users' facts (or mem0 memories) as NDJSON, imported by a job; `lines` is the
        NDJSON itself or the items to send one per line."""
        if isinstance(lines, str):
            content = lines.encode()
        elif isinstance(lines, bytes):
            content = lines
        else:
            content = b"".join(
                jsonlib.dumps(dict(item), ensure_ascii=False).encode() + b"\n" for item in lines
            )
        params = {"format": format, "dry_run": dry_run}
        call = Call(
            "POST", "/v1/admin/import", model(m.ImportQueued), params=params, content=content
        )
        return await self._run(call, idempotency_key)

    async def explain(
        self, candidate: m.ExplainIn | Mapping[str, Any], *, idempotency_key: str | None = None
    ) -> m.Explained:
        """The gate's screening trace for `{"fact": <a write's body>}` or `{"messages":
        [...]}`, writing nothing (an admin key)."""
        call = Call("POST", "/v1/admin/gate/explain", model(m.Explained), json=body(candidate))
        return await self._run(call, idempotency_key)

    # --------------------------------------------------------------------------- webhooks

    async def create_webhook(
        self,
        url: str,
        events: Sequence[str],
        *,
        description: str | None = None,
        idempotency_key: str | None = None,
    ) -> m.EndpointWithSecret:
        """Register an endpoint (an admin key); its signing secret (`whsec_…`) is in this
        answer only."""
        payload: dict[str, Any] = {"url": url, "events": list(events)}
        if description is not None:
            payload["description"] = description
        call = Call("POST", "/v1/admin/webhooks", model(m.EndpointWithSecret), json=payload)
        return await self._run(call, idempotency_key)

    def _webhooks_call(self, limit: int | None, cursor: str | None) -> Call[m.EndpointPage]:
        params = {"limit": limit, "cursor": cursor}
        return Call("GET", "/v1/admin/webhooks", model(m.EndpointPage), params=params)

    async def list_webhooks(
        self, *, limit: int | None = None, cursor: str | None = None
    ) -> m.EndpointPage:
        return await self._run(self._webhooks_call(limit, cursor))

    async def iter_webhooks(self, *, limit: int | None = None) -> AsyncIterator[m.Endpoint]:
        async for endpoint in self._pages(lambda c: self._webhooks_call(limit, c)):
            yield endpoint

    async def get_webhook(self, endpoint_id: str) -> m.Endpoint:
        path = f"/v1/admin/webhooks/{_seg(endpoint_id)}"
        return await self._run(Call("GET", path, model(m.Endpoint)))

    async def delete_webhook(
        self, endpoint_id: str, *, idempotency_key: str | None = None
    ) -> m.Deleted:
        path = f"/v1/admin/webhooks/{_seg(endpoint_id)}"
        return await self._run(Call("DELETE", path, model(m.Deleted)), idempotency_key)

    async def rotate_webhook_secret(
        self,
        endpoint_id: str,
        *,
        grace_seconds: int | None = None,
        idempotency_key: str | None = None,
    ) -> m.EndpointWithSecret:
        """A new signing secret; the old one also signs for `grace_seconds` (default a day)."""
        payload = {"grace_seconds": grace_seconds} if grace_seconds is not None else None
        path = f"/v1/admin/webhooks/{_seg(endpoint_id)}/rotate"
        call = Call("POST", path, model(m.EndpointWithSecret), json=payload)
        return await self._run(call, idempotency_key)

    def _deliveries_call(
        self, endpoint_id: str, state: str | None, limit: int | None, cursor: str | None
    ) -> Call[m.DeliveryPage]:
        params = {"state": state, "limit": limit, "cursor": cursor}
        path = f"/v1/admin/webhooks/{_seg(endpoint_id)}/deliveries"
        return Call("GET", path, model(m.DeliveryPage), params=params)

    async def list_deliveries(
        self,
        endpoint_id: str,
        *,
        state: Literal["pending", "delivered", "dead"] | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> m.DeliveryPage:
        """An endpoint's deliveries, oldest first; `state="dead"` is the dead-letter list."""
        return await self._run(self._deliveries_call(endpoint_id, state, limit, cursor))

    async def iter_deliveries(
        self,
        endpoint_id: str,
        *,
        state: Literal["pending", "delivered", "dead"] | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[m.Delivery]:
        pages = self._pages(lambda c: self._deliveries_call(endpoint_id, state, limit, c))
        async for delivery in pages:
            yield delivery

    async def replay_delivery(
        self, endpoint_id: str, delivery_id: str, *, idempotency_key: str | None = None
    ) -> m.Delivery:
        """Send a dead delivery again (same webhook-id); 409 unless it was dead."""
        path = f"/v1/admin/webhooks/{_seg(endpoint_id)}/deliveries/{_seg(delivery_id)}/replay"
        return await self._run(Call("POST", path, model(m.Delivery)), idempotency_key)

    # ----------------------------------------------------------------------------- health

    async def healthz(self) -> m.Alive:
        return await self._run(Call("GET", "/healthz", model(m.Alive)))

    async def readyz(self) -> m.Ready:
        return await self._run(Call("GET", "/readyz", model(m.Ready)))
