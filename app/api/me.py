""" "Facts about me" (docs/isolation.md#user-tokens, docs/api.md#endpoints,
docs/isolation.md#facts-about-me 纠错入口, docs/lifecycle.md#forget-me): a user token's API.

`POST /v1/users/{u}/tokens` (agent key) mints the token; everything else here answers only
to that token, for its own user: see, correct, delete, confirm or refuse, export, forget.
The user never picks a source kind: their edits are `explicit_instruction`
(docs/isolation.md#facts-about-me).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from app import clock
from app.api.deps import agent, get_ctx, me
from app.api.facts import (
    apply_patch,
    remove_fact,
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
from app.auth import Principal
from app.services import candidates as candidates_service
from app.services import facts as facts_service
from app.services import keys as keys_service
from app.services import me as me_service
from app.services import web as web_service
from app.shapes import audit_json, candidate_json, fact_json

router = APIRouter(prefix="/v1", tags=["me"], responses=KEYED)


def _uid(who: Principal) -> str:
    assert who.user_id is not None  # the `me` dependency admits user tokens only
    return who.user_id


# ------------------------------------------------------------------------------ tokens


@router.post(
    "/users/{user_id}/tokens",
    status_code=201,
    response_model=Token,
    responses={**NAMED, **WRITE},
)
async def mint_token(
    request: Request, user_id: UserId, body: TokenIn | None = None, who: Principal = agent
) -> dict[str, Any]:
    ttl = body.ttl_seconds if body is not None else DEFAULT_TTL_S
    now = clock.now()
    token, expires_at = await keys_service.mint_token(get_ctx(request), who, user_id, ttl, now)
    link = body is not None and body.link
    return {
        "token": token,
        "user_id": user_id,
        "expires_at": expires_at.isoformat(),
        "scopes": list(who.scopes) if who.scopes is not None else None,
        "max_sensitivity": who.max_sensitivity.value,
        "login_url": await web_service.login_link(get_ctx(request), token, now) if link else None,
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
    "imported": "imported from another memory store on {date}",
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
    "imported": "{date} 从其他记忆系统导入",
}


def why_kept(row: Any, lang: str = "en") -> str:
    """Why memgate keeps this fact, in words a user understands
    (docs/isolation.md#facts-about-me)."""
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
    out = fact_json(row)
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
    rows = await facts_service.list_page(
        get_ctx(request), who, _uid(who), decode_time_id_cursor(cursor), limit + 1, status=status
    )
    return page(
        rows,
        limit,
        lambda r: [r["created_at"].isoformat(), str(r["id"])],
        lambda r: me_fact_json(r, lang),
    )


@router.patch(
    "/me/facts/{fact_id}",
    response_model=WriteResult,
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
    rows = await candidates_service.list_page(
        get_ctx(request), who, _uid(who), status, decode_time_id_cursor(cursor), limit + 1
    )
    return page(rows, limit, lambda r: [r["created_at"].isoformat(), str(r["id"])], candidate_json)


@router.post(
    "/me/candidates/{candidate_id}/confirm",
    response_model=WriteResult,
    responses={**WRITE_OUTCOMES, **NAMED, **WRITE},
)
async def confirm_my_candidate(
    request: Request, candidate_id: uuid.UUID, who: Principal = me
) -> JSONResponse:
    """The user says yes: written now as their explicit instruction, through the gate."""
    outcome, _ = await candidates_service.confirm(
        get_ctx(request), who, _uid(who), candidate_id, clock.now()
    )
    return JSONResponse(outcome.body(), status_code=outcome.status_code)


@router.post(
    "/me/candidates/{candidate_id}/reject",
    response_model=Rejected,
    responses={**NAMED, **WRITE},
)
async def reject_my_candidate(
    request: Request, candidate_id: uuid.UUID, who: Principal = me
) -> dict[str, Any]:
    """The user says no: dropped, and tombstoned so extraction stops offering it."""
    await candidates_service.reject(get_ctx(request), who, _uid(who), candidate_id, clock.now())
    return {"id": str(candidate_id), "status": "rejected"}


# ---------------------------------------------------------------------- export, forget


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


@router.get("/me/export", response_model=Export)
async def export_me(request: Request, who: Principal = me) -> dict[str, Any]:
    """Everything kept about the user, as JSON: facts of every status with their version
    chains, candidates, sessions still in Redis, state, recall log, audit trail."""
    return await export_body(request, who)


async def export_body(request: Request, who: Principal) -> dict[str, Any]:
    """The export's JSON (also the /me page's download, app/api/web.py)."""
    user_id = _uid(who)
    now = clock.now()
    found = await me_service.export(get_ctx(request), who, user_id, now)
    state, hint_visible, chains = found.state, found.state_visible, found.chains
    return {
        "user_id": user_id,
        "exported_at": now.isoformat(),
        "facts": [
            {**me_fact_json(r), "history": [str(i) for i in chains.get(r["id"], [r["id"]])]}
            for r in found.facts
        ],
        "candidates": [candidate_json(r) for r in found.candidates],
        "sessions": found.sessions,
        "state": {
            "last_interaction_at": _iso(state["last_interaction_at"]) if state else None,
            "last_session_id": state["last_session_id"] if state and hint_visible else None,
            "last_session_hint": state["last_session_hint"] if state and hint_visible else None,
        },
        "recalls": [
            {
                "trace_id": r["trace_id"],
                "scope": r["scope"],
                "fact_ids": [str(i) for i in r["fact_ids"]],
                "tokens": r["tokens"],
                "tier": r["tier"],
                "created_at": _iso(r["created_at"]),
            }
            for r in found.recalls
        ],
        "audit": [audit_json(r) for r in found.events],
    }


@router.delete("/me", response_model=Forgotten, responses=WRITE)
async def forget_me(request: Request, who: Principal = me) -> dict[str, Any]:
    """Forget me: everything about the user goes; tombstone hashes and a content-free
    audit record remain; the user's tokens (this one too) are revoked."""
    user_id = _uid(who)
    counts = await me_service.forget(get_ctx(request), who, user_id, clock.now())
    return {"user_id": user_id, "status": "forgotten", "deleted": counts}
