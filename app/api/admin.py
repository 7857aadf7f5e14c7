"""Admin: API keys and the tenant's policy overrides (docs/api.md#endpoints,
docs/architecture.md#configuration-and-policy)."""

from __future__ import annotations

import re
import uuid
from typing import Any

from fastapi import APIRouter, Body, Request
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from app.api.deps import admin, get_ctx
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
from app.auth import Principal
from app.errors import Forbidden, InvalidRequest, SecretInIdentifier
from app.memory.policy import effective_policy, override_json_schema
from app.memory.screening import identifier_holds_secret
from app.services import keys as keys_service
from app.services import policies as policies_service
from app.services.keys import within_rights
from app.shapes import key_json

router = APIRouter(prefix="/v1/admin", tags=["admin"], responses=KEYED)


@router.get("/keys", response_model=ApiKeyPage)
async def list_keys(
    request: Request,
    who: Principal = admin,
    limit: Limit = DEFAULT_LIMIT,
    cursor: Cursor = None,
) -> dict[str, Any]:
    # a key limited to scopes or a low ceiling sees only the keys within its own rights
    rows = await keys_service.list_page(
        get_ctx(request), who, decode_uuid_cursor(cursor), limit + 1
    )
    return page(rows, limit, lambda r: str(r["id"]), key_json)


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
            {
                "scopes": list(who.scopes) if who.scopes is not None else None,
                "max_sensitivity": who.max_sensitivity.value,
            },
        )
    secret, row = await keys_service.create(
        get_ctx(request),
        who,
        role=body.role,
        name=body.name,
        scopes=body.scopes,
        max_sensitivity=body.max_sensitivity,
    )
    return {"key": secret, **key_json(row)}


@router.delete("/keys/{key_id}", response_model=Revoked, responses={**NAMED, **WRITE})
async def revoke_key(request: Request, key_id: uuid.UUID, who: Principal = admin) -> dict[str, Any]:
    await keys_service.revoke(get_ctx(request), who, key_id)
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
    override = await policies_service.override(ctx, who.tenant_id)
    return _policy_json(override, ctx.policies.defaults())


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
    await policies_service.replace_override(ctx, who, override, result["version"])
    return JSONResponse(result)
