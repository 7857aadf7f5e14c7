"""Webhooks (docs/webhooks.md, docs/api.md#webhooks): an admin's endpoints, their secrets,
their deliveries and the dead-letter replay. Another tenant's ids answer 404."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

import asyncpg
from fastapi import APIRouter, Depends, Query, Request

from app.api.deps import get_ctx, require
from app.api.pagination import DEFAULT_LIMIT, Cursor, Limit, decode_uuid_cursor, page
from app.api.schemas.common import KEYED, NAMED, WRITE, Deleted
from app.api.schemas.webhooks import (
    Delivery,
    DeliveryPage,
    DeliveryState,
    Endpoint,
    EndpointCreate,
    EndpointPage,
    EndpointWithSecret,
    SecretRotate,
)
from app.auth import Principal
from app.errors import Forbidden
from app.memory.model import Role
from app.memory.webhooks import message_id
from app.services import webhooks as service

router = APIRouter(prefix="/v1/admin/webhooks", tags=["webhooks"], responses=KEYED)
_admin = require(Role.ADMIN)


async def _tenant_wide_admin(request: Request) -> Principal:
    """Endpoints receive the events of every scope: only an admin key not limited to
    scopes manages them or reads their deliveries (as /v1/ops/stats)."""
    who = await _admin(request)
    if who.scopes is not None:
        raise Forbidden(
            "webhooks carry every scope's events: this needs a key not limited to scopes"
        )
    return who


admin = Depends(_tenant_wide_admin)


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


def endpoint_json(row: asyncpg.Record) -> dict[str, Any]:
    return {
        "id": str(row["id"]),
        "url": row["url"],
        "description": row["description"],
        "events": list(row["events"]),
        "created_at": row["created_at"].isoformat(),
        "updated_at": row["updated_at"].isoformat(),
        "previous_secret_until": _iso(row["previous_until"]),
    }


def delivery_json(row: asyncpg.Record) -> dict[str, Any]:
    return {
        "id": str(row["id"]),
        "webhook_id": message_id(row["id"]),
        "endpoint_id": str(row["endpoint_id"]),
        "event_type": row["event_type"],
        "state": row["state"],
        "attempts": row["attempts"],
        "next_attempt_at": _iso(row["next_attempt_at"]) if row["state"] == "pending" else None,
        "last_status": row["last_status"],
        "last_error": row["last_error"],
        "delivered_at": _iso(row["delivered_at"]),
        "created_at": row["created_at"].isoformat(),
        "payload": row["payload"],
    }


@router.post("", status_code=201, response_model=EndpointWithSecret, responses=WRITE)
async def create_endpoint(
    request: Request, body: EndpointCreate, who: Principal = admin
) -> dict[str, Any]:
    secret, row = await service.create(
        get_ctx(request), who, body.url, list(body.events), body.description
    )
    return {**endpoint_json(row), "secret": secret}


@router.get("", response_model=EndpointPage)
async def list_endpoints(
    request: Request, who: Principal = admin, limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None
) -> dict[str, Any]:
    rows = await service.list_page(get_ctx(request), who, decode_uuid_cursor(cursor), limit + 1)
    return page(rows, limit, lambda r: str(r["id"]), endpoint_json)


@router.get("/{endpoint_id}", response_model=Endpoint, responses=NAMED)
async def get_endpoint(
    request: Request, endpoint_id: uuid.UUID, who: Principal = admin
) -> dict[str, Any]:
    return endpoint_json(await service.get(get_ctx(request), who, endpoint_id))


@router.delete("/{endpoint_id}", response_model=Deleted, responses={**NAMED, **WRITE})
async def delete_endpoint(
    request: Request, endpoint_id: uuid.UUID, who: Principal = admin
) -> dict[str, Any]:
    await service.delete(get_ctx(request), who, endpoint_id)
    return {"id": str(endpoint_id), "status": "deleted"}


@router.post(
    "/{endpoint_id}/rotate", response_model=EndpointWithSecret, responses={**NAMED, **WRITE}
)
async def rotate_secret(
    request: Request,
    endpoint_id: uuid.UUID,
    body: SecretRotate | None = None,
    who: Principal = admin,
) -> dict[str, Any]:
    grace = (body or SecretRotate()).grace_seconds
    secret, row = await service.rotate(get_ctx(request), who, endpoint_id, grace)
    return {**endpoint_json(row), "secret": secret}


@router.get("/{endpoint_id}/deliveries", response_model=DeliveryPage, responses=NAMED)
async def list_deliveries(
    request: Request,
    endpoint_id: uuid.UUID,
    who: Principal = admin,
    state: Annotated[DeliveryState | None, Query()] = None,
    limit: Limit = DEFAULT_LIMIT,
    cursor: Cursor = None,
) -> dict[str, Any]:
    rows = await service.deliveries(
        get_ctx(request), who, endpoint_id, state, decode_uuid_cursor(cursor), limit + 1
    )
    return page(rows, limit, lambda r: str(r["id"]), delivery_json)


@router.post(
    "/{endpoint_id}/deliveries/{delivery_id}/replay",
    response_model=Delivery,
    responses={**NAMED, **WRITE},
)
async def replay_delivery(
    request: Request, endpoint_id: uuid.UUID, delivery_id: uuid.UUID, who: Principal = admin
) -> dict[str, Any]:
    return delivery_json(await service.replay(get_ctx(request), who, endpoint_id, delivery_id))
