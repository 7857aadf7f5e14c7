""""Facts about me" (SPEC §2, §8; seed 000 §8 纠错入口, 002 §F): a user token's API.

`POST /v1/users/{u}/tokens` (agent key) mints the token; everything else here answers only
to that token, for its own user: see, correct, delete, confirm or refuse, export, forget.
The user never picks a source kind: their edits are `explicit_instruction` (SPEC §12).
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from app import clock
from app.api.deps import agent, get_ctx, me
from app.api.facts import (
    apply_patch,
    readable_scopes,
    remove_fact,
    row_visible,
    visible_sensitivities,
)
from app.api.pagination import DEFAULT_LIMIT, Cursor, Limit, decode_time_id_cursor, page
from app.api.schemas.candidates import CandidatePage
from app.api.schemas.common import KEYED, NAMED, WRITE, Deleted, Rejected, UserId
from app.api.schemas.facts import WRITE_OUTCOMES, FactPatch, WriteResult
from app.api.schemas.me import (
    DEFAULT_TTL_S,
    Export,
    Forgotten,
    MyFactPage,
    Token,
    TokenIn,
)
from app.auth import TOKEN_PREFIX, Principal, mint_user_token
from app.context import AppContext
from app.errors import Conflict, Forbidden, NotFound
from app.memory.model import Sensitivity
from app.session.store import SessionStore
from app.store import audit
from app.store import candidates as cand_store
from app.store import facts as facts_store
from app.store import keys as keys_store
from app.store import users as users_store
from app.store.db import tenant_tx
from app.writer import guard_user, promote, reject_candidate

router = APIRouter(prefix="/v1", tags=["me"], responses=KEYED)

def _uid(who: Principal) -> str:
    assert who.user_id is not None  # the `me` dependency admits user tokens only
    return who.user_id


# ------------------------------------------------------------------------------ tokens


@router.post(
    "/users/{user_id}/tokens", status_code=201, response_model=Token,
    responses={**NAMED, **WRITE},
)
async def mint_token(
    request: Request, user_id: UserId, body: TokenIn | None = None, who: Principal = agent
) -> dict[str, Any]:
    ctx = get_ctx(request)
    now = clock.now()
    ttl = body.ttl_seconds if body is not None else DEFAULT_TTL_S
    expires_at = (now + timedelta(seconds=ttl)).replace(microsecond=0)
    token_id = uuid.uuid4()
    token = mint_user_token(ctx.secret, who.tenant_id, user_id, token_id, expires_at)
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        # A token never sees more than the key that minted it: the same scopes and the
        # same sensitivity ceiling (an unlimited key with ceiling `restricted` mints a
        # token that sees everything kept about the user).
        row = await keys_store.insert_key(
            conn, tenant_id=who.tenant_id, secret=token, kind="user_token", role="user",
            user_id=user_id, expires_at=expires_at,
            scopes=list(who.scopes) if who.scopes is not None else None,
            max_sensitivity=who.max_sensitivity.value,
            created_by=who.key_id, key_id=token_id,  # the token's `i` claim names its row
        )
        await audit.record(
            conn, who.tenant_id, "token_mint", actor=who.key_id, actor_role=who.role.value,
            user_id=user_id, detail={"token_id": str(row["id"]), "ttl_seconds": ttl},
            at=now,
        )
    return {
        "token": token, "user_id": user_id, "expires_at": expires_at.isoformat(),
        "scopes": list(who.scopes) if who.scopes is not None else None,
        "max_sensitivity": who.max_sensitivity.value,
    }


# ------------------------------------------------------------------------------- facts

_WHY_EN = {
    "admin_policy": "set by the operator",
    "system": "recorded by the system on {date}",
    "explicit_instruction": "you said it explicitly on {date}",
    "document": "taken from a document on {date}",
    "user_message": "you mentioned it on {date}",
    "tool_observation": "observed by a tool on {date}",
    "agent_inference": "inferred by the assistant on {date}",
    "external_content": "taken from external content on {date}",
}
_WHY_ZH = {
    "admin_policy": "由运营方设定",
    "system": "系统于 {date} 记录",
    "explicit_instruction": "你在 {date} 明确说过",
    "document": "{date} 取自文档",
    "user_message": "你在 {date} 提到过",
    "tool_observation": "{date} 由工具观察到",
    "agent_inference": "{date} 由助手推断",
    "external_content": "{date} 取自外部内容",
}


def why_kept(row: Any, lang: str = "en") -> str:
    """Why memgate keeps this fact, in words a user understands (seed 000 §8)."""
    date = row["valid_from"].date().isoformat()
    kind = row["source_kind"]
    seen = int(row["observations"])
    if seen >= 2 and kind in ("user_message", "tool_observation", "agent_inference"):
        return f"在 {seen} 次对话中出现过" if lang == "zh" else f"seen in {seen} conversations"
    text = (_WHY_ZH if lang == "zh" else _WHY_EN)[kind].format(date=date)
    if seen >= 2:
        text += f"（出现 {seen} 次）" if lang == "zh" else f" (seen {seen} times)"
    return text


def me_fact_json(row: Any, lang: str = "en") -> dict[str, Any]:
    out = facts_store.fact_json(row)
    out["why"] = why_kept(row, lang)
    return out


@router.get("/me/facts", response_model=MyFactPage)
async def my_facts(
    request: Request,
    who: Principal = me,
    status: Annotated[str, Query(pattern="^(active|superseded|archived)$")] = "active",
    lang: Literal["en", "zh"] = "en",
    limit: Limit = DEFAULT_LIMIT,
    cursor: Cursor = None,
) -> dict[str, Any]:
    after = decode_time_id_cursor(cursor)
    flt = facts_store.FactFilter(
        status=status, allowed_scopes=readable_scopes(who),
        sensitivities=visible_sensitivities(who.max_sensitivity),
    )
    async with tenant_tx(get_ctx(request).pool, who.tenant_id) as conn:
        rows = await facts_store.list_facts(conn, who.tenant_id, _uid(who), flt, after, limit + 1)
    return page(
        rows, limit, lambda r: [r["created_at"].isoformat(), str(r["id"])],
        lambda r: me_fact_json(r, lang),
    )


@router.patch(
    "/me/facts/{fact_id}", response_model=WriteResult,
    responses={**WRITE_OUTCOMES, **NAMED, **WRITE},
)
async def correct_my_fact(
    request: Request, fact_id: uuid.UUID, body: FactPatch, who: Principal = me
) -> JSONResponse:
    # apply_patch ignores `source` for user tokens: the correction is explicit_instruction
    return await apply_patch(request, who, who.rights, _uid(who), fact_id, body)


@router.delete("/me/facts/{fact_id}", response_model=Deleted, responses={**NAMED, **WRITE})
async def delete_my_fact(request: Request, fact_id: uuid.UUID, who: Principal = me) -> Any:
    return await remove_fact(request, who, _uid(who), fact_id)


# -------------------------------------------------------------------------- candidates


@router.get("/me/candidates", response_model=CandidatePage)
async def my_candidates(
    request: Request,
    who: Principal = me,
    status: Annotated[str | None, Query(pattern="^(pending|promoted|rejected|expired)$")] = (
        "pending"
    ),
    limit: Limit = DEFAULT_LIMIT,
    cursor: Cursor = None,
) -> dict[str, Any]:
    after = decode_time_id_cursor(cursor)
    async with tenant_tx(get_ctx(request).pool, who.tenant_id) as conn:
        rows = await cand_store.list_for_user(
            conn, who.tenant_id, _uid(who), status, after, limit + 1,
            scopes=readable_scopes(who), sensitivities=visible_sensitivities(who.max_sensitivity),
        )
    return page(
        rows, limit, lambda r: [r["created_at"].isoformat(), str(r["id"])],
        cand_store.candidate_json,
    )


async def _my_candidate(conn: Any, who: Principal, candidate_id: uuid.UUID) -> Any:
    # fence before row lock: the order forget-me takes them (app/store/users.py)
    await guard_user(conn, who.tenant_id, _uid(who), clock.now())
    row = await cand_store.lock(conn, who.tenant_id, candidate_id)
    if row is None or row["user_id"] != who.user_id or row["status"] == "deleted":
        raise NotFound("candidate not found")
    if not row_visible(who, row):
        raise NotFound("candidate not found")
    return row


@router.post(
    "/me/candidates/{candidate_id}/confirm", response_model=WriteResult,
    responses={**WRITE_OUTCOMES, **NAMED, **WRITE},
)
async def confirm_my_candidate(
    request: Request, candidate_id: uuid.UUID, who: Principal = me
) -> JSONResponse:
    """The user says yes: written now as their explicit instruction, through the gate."""
    ctx = get_ctx(request)
    now = clock.now()
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        row = await _my_candidate(conn, who, candidate_id)
        if row["status"] != "pending":
            raise Conflict(f"candidate is {row['status']}", {"status": row["status"]})
        policy = await ctx.policies.get(conn, who.tenant_id)
        outcome = await promote(
            ctx, conn, who.tenant_id, who.rights, row, policy, now, confirmed_by_user=True
        )
    return JSONResponse(outcome.body(), status_code=outcome.status_code)


@router.post(
    "/me/candidates/{candidate_id}/reject", response_model=Rejected,
    responses={**NAMED, **WRITE},
)
async def reject_my_candidate(
    request: Request, candidate_id: uuid.UUID, who: Principal = me
) -> dict[str, Any]:
    """The user says no: dropped, and tombstoned so extraction stops offering it."""
    ctx = get_ctx(request)
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        row = await _my_candidate(conn, who, candidate_id)
        if row["status"] == "rejected":
            return {"id": str(candidate_id), "status": "rejected"}
        if row["status"] != "pending":
            raise Conflict(f"candidate is {row['status']}", {"status": row["status"]})
        policy = await ctx.policies.get(conn, who.tenant_id)
        await reject_candidate(conn, who.tenant_id, who.rights, row, clock.now(), policy.version)
    return {"id": str(candidate_id), "status": "rejected"}


# ---------------------------------------------------------------------- export, forget


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


@router.get("/me/export", response_model=Export)
async def export_me(request: Request, who: Principal = me) -> dict[str, Any]:
    """Everything kept about the user, as JSON: facts of every status with their version
    chains, candidates, sessions still in Redis, state, recall log, audit trail."""
    ctx = get_ctx(request)
    user_id = _uid(who)
    now = clock.now()
    scopes = readable_scopes(who)
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        # A token sees what the key that minted it could see (scopes, sensitivity).
        facts = [
            r for r in await users_store.all_facts(conn, who.tenant_id, user_id)
            if row_visible(who, r)
        ]
        chains = users_store.chains(await users_store.version_links(conn, who.tenant_id, user_id))
        candidates = [
            r for r in await users_store.all_candidates(conn, who.tenant_id, user_id)
            if row_visible(who, r)
        ]
        state = await users_store.state(conn, who.tenant_id, user_id)
        recalls = [
            r for r in await users_store.recalls(conn, who.tenant_id, user_id)
            if scopes is None or (r["scope"] or "global") in scopes
        ]
        events = await audit.list_for_user(
            conn, who.tenant_id, user_id, None, 10_000,
            scopes=scopes, sensitivities=visible_sensitivities(who.max_sensitivity),
        )
        await audit.record(
            conn, who.tenant_id, "export", actor=who.key_id, actor_role=who.role.value,
            user_id=user_id, detail={"facts": len(facts), "candidates": len(candidates)},
            at=now,
        )
    store = SessionStore(ctx.redis)
    sessions = []
    for sid in await store.user_sessions(who.tenant_id, user_id):
        s = await store.get(who.tenant_id, sid)
        if s is not None and s.user_id == user_id and (scopes is None or s.scope in scopes):
            sessions.append(s.json())
    hint_visible = state is not None and (
        scopes is None or (state["last_session_scope"] or "global") in scopes
    )
    return {
        "user_id": user_id,
        "exported_at": now.isoformat(),
        "facts": [
            {**me_fact_json(r), "history": [str(i) for i in chains.get(r["id"], [r["id"]])]}
            for r in facts
        ],
        "candidates": [cand_store.candidate_json(r) for r in candidates],
        "sessions": sessions,
        "state": {
            "last_interaction_at": _iso(state["last_interaction_at"]) if state else None,
            "last_session_id": state["last_session_id"] if state and hint_visible else None,
            "last_session_hint": state["last_session_hint"] if state and hint_visible else None,
        },
        "recalls": [
            {"trace_id": r["trace_id"], "scope": r["scope"],
             "fact_ids": [str(i) for i in r["fact_ids"]], "tokens": r["tokens"],
             "tier": r["tier"], "created_at": _iso(r["created_at"])}
            for r in recalls
        ],
        "audit": [audit.audit_json(r) for r in events],
    }


def _drop_cached_tokens(ctx: AppContext, tenant_id: uuid.UUID, user_id: str) -> None:
    """Revoked tokens stop working in this process at once (others: within the cache TTL)."""
    for secret, (_, cached) in list(ctx.key_cache.items()):
        if (secret.startswith(TOKEN_PREFIX) and cached.tenant_id == tenant_id
                and cached.user_id == user_id):
            ctx.key_cache.pop(secret, None)


@router.delete("/me", response_model=Forgotten, responses=WRITE)
async def forget_me(request: Request, who: Principal = me) -> dict[str, Any]:
    """Forget me: everything about the user goes; tombstone hashes and a content-free
    audit record remain; the user's tokens (this one too) are revoked."""
    if who.scopes is not None or who.max_sensitivity is not Sensitivity.RESTRICTED:
        # Forgetting erases every scope and every sensitivity; a token may not touch what
        # the key that minted it could not see (README "Security model").
        raise Forbidden(
            "forget-me needs a user token minted by a key with no scope limit and "
            "ceiling restricted"
        )
    ctx = get_ctx(request)
    user_id = _uid(who)
    now = clock.now()
    if ctx.recall_log is not None:
        await ctx.recall_log.flush()  # recalls still buffered would re-add log rows after us
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        # The fence (app/store/users.py): this waits for the user's writes in flight, and
        # any write that began before `now` and comes after is refused.
        await users_store.lock_user(conn, who.tenant_id, user_id)
        counts = await users_store.forget(conn, who.tenant_id, user_id, now)
        counts["tokens_revoked"] = await keys_store.revoke_user_tokens(
            conn, who.tenant_id, user_id
        )
        await audit.record(
            conn, who.tenant_id, "forget_me", actor=who.key_id, actor_role=who.role.value,
            user_id=user_id, detail={"erased": True, "counts": counts}, at=now,
        )
    # Redis and the user's state last: a session or state written by a request that got
    # past the fence before the erasure committed is gone too.
    counts["sessions"] = await SessionStore(ctx.redis).forget_user(who.tenant_id, user_id)
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        await users_store.forget_state(conn, who.tenant_id, user_id)
    _drop_cached_tokens(ctx, who.tenant_id, user_id)
    return {"user_id": user_id, "status": "forgotten", "deleted": counts}
