"""The MCP server object: five tools (remember, recall, list_facts, forget, observe) and one
resource template (a user's active facts), each one call to memgate's REST API with the
caller's key. Nothing here decides anything: the API's gate and isolation answer."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from app.mcp.rest import MemgateError, Rest, segment
from app.memory.model import FactType, Sensitivity

INSTRUCTIONS = (
    "Long-term memory about the user, kept by memgate. Call `recall` before answering and "
    "inject its `context`; `remember` what the user wants kept (the gate may refuse it and "
    "says why); `observe` hands over conversation turns for background extraction; "
    "`forget` deletes a fact for good."
)


@dataclass(frozen=True)
class Settings:
    """Where memgate is and whom the server acts for (docs/mcp.md#configuration)."""

    url: str
    api_key: str | None = None
    user: str | None = None

    @classmethod
    def from_env(cls) -> Settings:
        return cls(
            url=os.environ.get("MEMGATE_URL", "http://127.0.0.1:8080"),
            api_key=os.environ.get("MEMGATE_API_KEY") or None,
            user=os.environ.get("MEMGATE_USER") or None,
        )


# ------------------------------------------------------------------------------ answers


class RememberResult(BaseModel):
    """The gate's decision (docs/gate.md#decisions): never the statement itself."""

    decision: Literal["written", "merged", "superseded", "pending", "rejected"]
    reason: str | None = Field(None, description="why it was refused or held (a reason code)")
    fact_id: str | None = None
    candidate_id: str | None = Field(None, description="when pending: the candidate held")
    superseded: list[str] = Field(default_factory=list, description="facts this one replaced")
    detail: dict[str, Any] | None = Field(
        None, description="which detector refused it, on which field; never the text"
    )


class RecallResult(BaseModel):
    context: str = Field(description="the block to inject into the prompt, within budget")
    fact_ids: list[str] = Field(description="the facts packed into `context`, in order")
    trace_id: str
    tier: str
    tokens: int


class FactItem(BaseModel):
    id: str
    type: str
    predicate: str | None
    value: Any
    statement: str
    scope: str
    sensitivity: str
    confidence: float
    source_kind: str
    status: str
    created_at: str | None


class FactList(BaseModel):
    items: list[FactItem]
    next_cursor: str | None = Field(
        description="pass as `cursor` for the next page; null at the end"
    )


class Forgotten(BaseModel):
    id: str
    status: str


class Observed(BaseModel):
    job_id: str = Field(description="GET /v1/jobs/{job_id} on the API tells what was decided")


class Turn(BaseModel):
    role: Literal["user", "assistant", "system", "tool"]
    content: str
    turn_id: str | None = None


# ------------------------------------------------------------------------------- inputs

User = Annotated[
    str | None,
    Field(description="the user's id; default: the server's configured user (MEMGATE_USER)"),
]
Scope = Annotated[str | None, Field(description="`global` (default) or `kind:name`")]
IdempotencyKey = Annotated[
    str | None,
    Field(description="send the same value when retrying this call: it is not applied twice"),
]
RememberSource = Literal[
    "user_message", "explicit_instruction", "tool_observation", "agent_inference", "document"
]


def fact_item(fact: dict[str, Any]) -> FactItem:
    return FactItem(
        id=fact["id"],
        type=fact["type"],
        predicate=fact.get("predicate"),
        value=fact.get("value"),
        statement=fact["statement"],
        scope=fact["scope"],
        sensitivity=fact["sensitivity"],
        confidence=fact["confidence"],
        source_kind=fact["source"]["kind"],
        status=fact["status"],
        created_at=fact.get("created_at"),
    )


def ok(model: BaseModel) -> CallToolResult:
    data = model.model_dump(mode="json")
    text = json.dumps(data, ensure_ascii=False)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def failed(err: MemgateError) -> CallToolResult:
    """A tool error carrying the API's envelope (docs/api.md#errors), as text and as data."""
    envelope = err.envelope()
    text = json.dumps(envelope, ensure_ascii=False)
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=envelope, is_error=True
    )


def build_server(settings: Settings) -> MCPServer[Any]:
    """The server for these settings; `rest` lives as long as the server runs."""
    state: dict[str, Any] = {"sessions": 0}

    @asynccontextmanager
    async def lifespan(_: MCPServer[Any]) -> AsyncIterator[dict[str, Any]]:
        # entered once per MCP session over streamable HTTP: one HTTP client for all of
        # them, closed when the last one ends
        if state["sessions"] == 0:
            state["rest"] = Rest(settings.url)
        state["sessions"] += 1
        try:
            yield {}
        finally:
            state["sessions"] -= 1
            if state["sessions"] == 0:
                await state.pop("rest").aclose()

    server: MCPServer[Any] = MCPServer(
        "memgate", instructions=INSTRUCTIONS, version="0.1.0", lifespan=lifespan
    )

    def key_of(ctx: Context[Any, Any] | None) -> str:
        """The request's own bearer key (streamable HTTP) before the configured one: one
        HTTP server serves several tenants, each with its key, never mixing them."""
        headers = None
        if ctx is not None:
            try:
                headers = ctx.headers
            except ValueError:  # no request (a direct call)
                headers = None
        header = next((v for k, v in (headers or {}).items() if k.lower() == "authorization"), None)
        if header is not None:
            # a request that names a credential is never served with the server's own key
            scheme, _, token = header.partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
            raise MemgateError("unauthorized", "Authorization must be Bearer <key>", 401)
        if settings.api_key:
            return settings.api_key
        raise MemgateError(
            "unauthorized", "no key: send Authorization: Bearer or set MEMGATE_API_KEY", 401
        )

    def user_of(user: str | None) -> str:
        chosen = user if user is not None else settings.user
        if not chosen:
            raise MemgateError("invalid_request", "no user: pass `user` or set MEMGATE_USER", 422)
        return chosen

    async def api(
        ctx: Context[Any, Any] | None, method: str, user: str | None, path: str, **kw: Any
    ) -> Any:
        """One call under `/v1/users/{user}`; `MemgateError` for an error answer."""
        rest: Rest = state["rest"]
        return await rest.call(
            method, f"/v1/users/{segment(user_of(user))}{path}", key_of(ctx), **kw
        )

    @server.tool(
        description="Write one fact about the user through memgate's write gate. The answer is "
        "the gate's decision (written, merged, superseded, pending, rejected) with its reason: "
        "secrets, ID and card numbers, injections, other people's data and small talk are "
        "refused. A fact that was forgotten is refused as `tombstoned` unless the source is "
        "`explicit_instruction` (the user explicitly asks to keep it again)."
    )
    async def remember(
        statement: Annotated[str, Field(description="the fact in a sentence")],
        ctx: Context[Any, Any],
        user: User = None,
        type: Annotated[FactType, Field(description="what kind of memory")] = FactType.SEMANTIC,
        predicate: Annotated[str | None, Field(description="e.g. allergy, language")] = None,
        value: Annotated[Any, Field(description="the predicate's value")] = None,
        scope: Scope = None,
        source_kind: Annotated[
            RememberSource, Field(description="who said it; decides authority and confidence")
        ] = "user_message",
        evidence: Annotated[str | None, Field(description="the words it comes from")] = None,
        consent: Annotated[
            bool, Field(description="the user agreed to keep sensitive data")
        ] = False,
        sensitivity: Sensitivity | None = None,
        occurred_at: Annotated[
            str | None, Field(description="an episode's date, RFC 3339 with a zone")
        ] = None,
        idempotency_key: IdempotencyKey = None,
    ) -> Annotated[CallToolResult, RememberResult]:
        source: dict[str, Any] = {"kind": source_kind}
        if evidence is not None:
            source["evidence"] = evidence
        body: dict[str, Any] = {"type": type.value, "statement": statement, "source": source}
        optional = {
            "predicate": predicate,
            "value": value,
            "scope": scope,
            "sensitivity": sensitivity.value if sensitivity else None,
            "occurred_at": occurred_at,
        }
        body.update({k: v for k, v in optional.items() if v is not None})
        if consent:
            body["consent"] = True
        try:
            answer = await api(
                ctx, "POST", user, "/facts", json_body=body, idempotency_key=idempotency_key
            )
        except MemgateError as err:
            return failed(err)
        candidate = answer.get("candidate")
        return ok(
            RememberResult(
                decision=answer["decision"],
                reason=answer.get("reason"),
                fact_id=(answer.get("fact") or {}).get("id"),
                candidate_id=candidate.get("id") if isinstance(candidate, dict) else candidate,
                superseded=answer.get("superseded") or [],
                detail=answer.get("detail"),
            )
        )

    @server.tool(
        description="The few facts about the user that matter for `query`, packed into a "
        "token budget: inject `context` into the prompt. Call it before each model call."
    )
    async def recall(
        query: Annotated[str, Field(description="the user's message or the task at hand")],
        ctx: Context[Any, Any],
        user: User = None,
        scope: Scope = None,
        budget_tokens: Annotated[int | None, Field(ge=1, le=4000)] = None,
        k: Annotated[int | None, Field(ge=1, le=50, description="at most this many facts")] = None,
        session_id: str | None = None,
    ) -> Annotated[CallToolResult, RecallResult]:
        optional = {
            "scope": scope,
            "budget_tokens": budget_tokens,
            "k": k,
            "session_id": session_id,
        }
        body = {"query": query, **{k_: v for k_, v in optional.items() if v is not None}}
        try:
            answer = await api(ctx, "POST", user, "/recall", json_body=body)
        except MemgateError as err:
            return failed(err)
        return ok(
            RecallResult(
                context=answer["context"],
                fact_ids=[f["id"] for f in answer["facts"]],
                trace_id=answer["trace_id"],
                tier=answer["tier"],
                tokens=answer["tokens"],
            )
        )

    @server.tool(description="A page of the facts memgate keeps about the user, newest first.")
    async def list_facts(
        ctx: Context[Any, Any],
        user: User = None,
        scope: Scope = None,
        type: FactType | None = None,
        predicate: str | None = None,
        status: Literal["active", "superseded", "archived"] = "active",
        limit: Annotated[int, Field(ge=1, le=200)] = 50,
        cursor: Annotated[str | None, Field(description="a `next_cursor` from before")] = None,
    ) -> Annotated[CallToolResult, FactList]:
        params = {
            "scope": scope,
            "type": type.value if type else None,
            "predicate": predicate,
            "status": status,
            "limit": limit,
            "cursor": cursor,
        }
        try:
            page = await api(ctx, "GET", user, "/facts", params=params)
        except MemgateError as err:
            return failed(err)
        items = [fact_item(f) for f in page["items"]]
        return ok(FactList(items=items, next_cursor=page["next_cursor"]))

    @server.tool(
        description="Delete a fact for good: its whole version chain is erased and "
        "tombstoned, so the same content is not learned again from conversation."
    )
    async def forget(
        fact_id: Annotated[str, Field(description="the fact's id")],
        ctx: Context[Any, Any],
        user: User = None,
        idempotency_key: IdempotencyKey = None,
    ) -> Annotated[CallToolResult, Forgotten]:
        path = f"/facts/{segment(fact_id)}"
        try:
            answer = await api(ctx, "DELETE", user, path, idempotency_key=idempotency_key)
        except MemgateError as err:
            return failed(err)
        return ok(Forgotten(id=answer["id"], status=answer["status"]))

    @server.tool(
        description="Hand over conversation turns: memgate extracts what is worth keeping in "
        "the background, through the same gate. Answers the job's id."
    )
    async def observe(
        messages: Annotated[list[Turn], Field(min_length=1, max_length=50)],
        ctx: Context[Any, Any],
        user: User = None,
        scope: Scope = None,
        session_id: str | None = None,
        idempotency_key: IdempotencyKey = None,
    ) -> Annotated[CallToolResult, Observed]:
        body: dict[str, Any] = {"messages": [m.model_dump(exclude_none=True) for m in messages]}
        if scope is not None:
            body["scope"] = scope
        if session_id is not None:
            body["session_id"] = session_id
        try:
            answer = await api(
                ctx, "POST", user, "/observations", json_body=body, idempotency_key=idempotency_key
            )
        except MemgateError as err:
            return failed(err)
        return ok(Observed(job_id=answer["job_id"]))

    @server.resource(
        "memgate://users/{user}/facts",
        name="facts",
        description="The user's active facts (the newest 200), as JSON",
        mime_type="application/json",
    )
    async def facts_resource(user: str, ctx: Context[Any, Any]) -> str:
        try:
            page = await api(ctx, "GET", user, "/facts", params={"status": "active", "limit": 200})
        except MemgateError as err:
            raise ResourceError(err.as_json()) from None
        items = [fact_item(f).model_dump() for f in page["items"]]
        return json.dumps(
            {"user": user, "items": items, "next_cursor": page["next_cursor"]}, ensure_ascii=False
        )

    return server
