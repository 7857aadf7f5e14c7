"""Admin: API keys and the tenant's policy overrides (SPEC §8, §10)."""

from __future__ import annotations

import re
import uuid
from typing import Any

from fastapi import APIRouter, Body, Request
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from app.api.deps import admin, get_ctx
from app.api.facts import visible_sensitivities
from app.api.pagination import DEFAULT_LIMIT, Cursor, Limit, decode_uuid_cursor, page
from app.api.schemas.admin import (
    SCOPE_PATTERN,
    ApiKeyPage,
    KeyCreate,
    NewApiKey,
    PolicyOut,
    Revoked,
)
from app.api.schemas.common import KEYED, NAMED, WRITE, errors
from app.auth import Principal, new_api_key
from app.errors import Forbidden, InvalidRequest, NotFound, SecretInIdentifier
from app.memory.model import sensitivity_allowed
from app.memory.policy import effective_policy, override_json_schema
from app.memory.screening import identifier_holds_secret
from app.store import audit
from app.store import keys as keys_store
from app.store.db import tenant_tx

router = APIRouter(prefix="/v1/admin", tags=["admin"], responses=KEYED)


@router.get("/keys", response_model=ApiKeyPage)
async def list_keys(
    request: Request,
    who: Principal = admin,
    limit: Limit = DEFAULT_LIMIT,
    cursor: Cursor = None,
) -> dict[str, Any]:
    after = decode_uuid_cursor(cursor)
    async with tenant_tx(get_ctx(request).pool, who.tenant_id) as conn:
        # a key limited to scopes or a low ceiling sees only the keys within its own rights
        rows = await keys_store.list_keys(
            conn, who.tenant_id, after, limit + 1,
            scopes=list(who.scopes) if who.scopes is not None else None,
            sensitivities=visible_sensitivities(who.max_sensitivity),
        )
    return page(rows, limit, lambda r: str(r["id"]), keys_store.key_json)


def within_rights(who: Principal, scopes: list[str] | None, ceiling: str) -> bool:
    """Are these rights no more than the caller's own (scopes and sensitivity ceiling)?"""
    if who.scopes is not None and (scopes is None or not set(scopes) <= set(who.scopes)):
        return False
    return sensitivity_allowed(ceiling, who.max_sensitivity)


@router.post("/keys", status_code=201, response_model=NewApiKey, responses=WRITE)
async def create_key(request: Request, body: KeyCreate, who: Principal = admin) -> dict[str, Any]:
    for scope in body.scopes or []:
        if not re.match(SCOPE_PATTERN, scope):
            raise InvalidRequest(
                "invalid scope", {"fields": [{"loc": ["body", "scopes"], "msg": scope}]}
            )
        if identifier_holds_secret(scope):
            raise SecretInIdentifier(
                "a scope holds a secret", {"fields": [{"loc": ["body", "scopes"]}]}
            )
    if not within_rights(who, body.scopes, body.max_sensitivity):
        raise Forbidden(
            "a key can only create keys within its own scopes and sensitivity ceiling",
            {"scopes": list(who.scopes) if who.scopes is not None else None,
             "max_sensitivity": who.max_sensitivity.value},
        )
    secret = new_api_key()
    async with tenant_tx(get_ctx(request).pool, who.tenant_id) as conn:
        row = await keys_store.insert_key(
            conn,
            tenant_id=who.tenant_id,
            secret=secret,
            kind="key",
            role=body.role,
            name=body.name,
            scopes=body.scopes,
            max_sensitivity=body.max_sensitivity,
            created_by=who.key_id,
        )
        await audit.record(
            conn,
            who.tenant_id,
            "key_create",
            actor=who.key_id,
            actor_role=who.role.value,
            detail={"key_id": str(row["id"]), "role": body.role, "scopes": body.scopes},
        )
    return {"key": secret, **keys_store.key_json(row)}


@router.delete("/keys/{key_id}", response_model=Revoked, responses={**NAMED, **WRITE})
async def revoke_key(request: Request, key_id: uuid.UUID, who: Principal = admin) -> dict[str, Any]:
    ctx = get_ctx(request)
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        target = await keys_store.get_key(conn, who.tenant_id, key_id)
        if target is None or target["kind"] != "key" or not within_rights(
            who, target["scopes"], target["max_sensitivity"]
        ):
            raise NotFound("key not found")
        row = await keys_store.revoke(conn, who.tenant_id, key_id)
        if row is None:
            raise NotFound("key not found")
        await audit.record(
            conn,
            who.tenant_id,
            "key_revoke",
            actor=who.key_id,
            actor_role=who.role.value,
            detail={"key_id": str(key_id)},
        )
    ctx.key_cache.clear()
    return {"id": str(key_id), "status": "revoked"}


def _policy_json(
    override: dict[str, Any], defaults: dict[str, Any], *, strict: bool = False
) -> dict[str, Any]:
    policy = effective_policy(defaults, override, strict=strict)
    return {
        "version": policy.version,
        "override": override,
        "effective": policy.model_dump(mode="json", by_alias=True),
    }


@router.get("/policy", response_model=PolicyOut)
async def get_policy(request: Request, who: Principal = admin) -> dict[str, Any]:
    ctx = get_ctx(request)
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        override = await conn.fetchval(
            "SELECT policy_override FROM tenants WHERE id = $1", who.tenant_id
        )
    return _policy_json(override or {}, ctx.policies.defaults())


@router.put("/policy", response_model=PolicyOut, responses=errors(400))
async def put_policy(
    request: Request,
    override: dict[str, Any] = Body(..., json_schema_extra=override_json_schema()),
    who: Principal = admin,
) -> JSONResponse:
    """Replace the tenant's override (a partial policy, deep-merged over the file)."""
    ctx = get_ctx(request)
    # versions are computed, not chosen: a given one is ignored (if it is a string)
    if "version" in override and not isinstance(override.pop("version"), str):
        raise InvalidRequest(
            "invalid policy", {"fields": [{"loc": ["body", "version"], "msg": "a string"}]}
        )
    try:
        result = _policy_json(override, ctx.policies.defaults(), strict=True)
    except ValidationError as exc:
        fields = [{"loc": list(map(str, e["loc"])), "msg": e["msg"]} for e in exc.errors()]
        raise InvalidRequest("invalid policy", {"fields": fields}) from exc
    async with tenant_tx(ctx.pool, who.tenant_id) as conn:
        await conn.execute(
            "UPDATE tenants SET policy_override = $2, updated_at = now() WHERE id = $1",
            who.tenant_id,
            override,
        )
        await audit.record(
            conn,
            who.tenant_id,
            "policy_update",
            actor=who.key_id,
            actor_role=who.role.value,
            policy_version=result["version"],
            detail={"override": override},
        )
    ctx.policies.invalidate(who.tenant_id)
    return JSONResponse(result)
