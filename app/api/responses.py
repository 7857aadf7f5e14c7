"""What every route may answer besides its success, in one place: the error statuses
declared on every router (the models are in app.api.schemas), and the 405 answer whose
`Allow` lists every method of the path (not only the first route that matched it)."""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from app.api.schemas.common import ANY_ROUTE, Responses
from app.errors import error_body

# Included with every router (app.main); each router and route adds its own statuses.
ERROR_RESPONSES: Responses = ANY_ROUTE


async def method_not_allowed(request: Request, exc: Exception) -> JSONResponse:
    """405 with `Allow` naming every method routed at this path."""
    methods: set[str] = set()
    for route in request.app.router.routes:
        match, _ = route.matches({**request.scope, "method": "__none__"})
        if match is not Match.NONE:
            methods |= set(getattr(route, "methods", None) or ())
    allow = ", ".join(sorted(methods))
    detail = exc.detail if isinstance(exc, StarletteHTTPException) else "method not allowed"
    return JSONResponse(
        error_body("method_not_allowed", str(detail)), status_code=405, headers={"Allow": allow}
    )
