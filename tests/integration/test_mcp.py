"""The MCP server (app/mcp, docs/mcp.md) driven by the official `mcp` client library.

Every test reaches memgate through the live uvicorn (`live` fixture) over a real loopback
socket: the MCP server is a client of the REST API. The MCP side is, in turn, in process
(the client session connected to the server object), over stdio (`python -m app.mcp` as a
child process) and over streamable HTTP (`python -m app.mcp --transport http` on a
loopback port). Isolation is proved with two users of one tenant and with two tenants.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from app.mcp.server import Settings, build_server

SECRET = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
SEAT = {
    "statement": "The user prefers a window seat on flights",
    "predicate": "seat_preference",
    "value": "window",
    "source_kind": "explicit_instruction",
}
QUERY = "which seat should I book on my flight?"


def uid() -> str:
    return f"u-{uuid.uuid4().hex[:10]}"


def answer(result: Any) -> dict[str, Any]:
    """A tool's structured answer; the call must have succeeded."""
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def error(result: Any) -> dict[str, Any]:
    """A tool error's envelope: the API's `{"error": {code, message, status}}`."""
    assert result.is_error, result.structured_content
    text = result.content[0].text
    assert text.startswith("{"), text
    envelope = json.loads(text)
    return envelope["error"]


def whole(result: Any) -> str:
    return json.dumps(
        {"content": [c.model_dump() for c in result.content], "s": result.structured_content}
    )


def in_process(url: str, key: str, user: str | None = None) -> Client:
    return Client(build_server(Settings(url=url, api_key=key, user=user)))


# --------------------------------------------------------------------------- in process


async def test_tools_and_resource_in_process(live: Any, tenant: Any) -> None:
    user = uid()
    async with in_process(live.url, tenant.keys["agent"], user) as mcp:
        names = {t.name for t in (await mcp.list_tools()).tools}
        assert names == {"remember", "recall", "list_facts", "forget", "observe"}

        written = answer(await mcp.call_tool("remember", SEAT))
        assert written["decision"] == "written" and written["fact_id"]
        fact_id = written["fact_id"]

        refused = await mcp.call_tool(
            "remember", {"statement": f"my GitHub token is {SECRET}", "source_kind": "user_message"}
        )
        assert answer(refused)["decision"] == "rejected"
        assert answer(refused)["reason"] == "secret_detected"
        assert answer(refused)["fact_id"] is None
        assert SECRET not in whole(refused) and SECRET[4:20] not in whole(refused)

        recalled = answer(await mcp.call_tool("recall", {"query": QUERY}))
        assert fact_id in recalled["fact_ids"] and "window" in recalled["context"]

        listed = answer(await mcp.call_tool("list_facts", {"limit": 10}))
        assert [f["id"] for f in listed["items"]] == [fact_id]
        assert listed["items"][0]["source_kind"] == "explicit_instruction"

        templates = (await mcp.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["memgate://users/{user}/facts"]
        read = await mcp.read_resource(f"memgate://users/{user}/facts")
        body = json.loads(read.contents[0].text)
        assert [f["id"] for f in body["items"]] == [fact_id]

        job = answer(
            await mcp.call_tool(
                "observe",
                {"messages": [{"role": "user", "content": "以后回复都用表格", "turn_id": "t1"}]},
            )
        )
        async with live.client() as http:
            got = await http.get(f"/v1/jobs/{job['job_id']}", headers=tenant.h())
        assert got.status_code == 200 and got.json()["kind"] == "observe"

        gone = answer(await mcp.call_tool("forget", {"fact_id": fact_id}))
        assert gone == {"id": fact_id, "status": "deleted"}
        recalled = answer(await mcp.call_tool("recall", {"query": QUERY}))
        assert fact_id not in recalled["fact_ids"]
        assert answer(await mcp.call_tool("list_facts", {}))["items"] == []
        read = await mcp.read_resource(f"memgate://users/{user}/facts")
        assert json.loads(read.contents[0].text)["items"] == []
        # the tombstone: the same content from the conversation is not learned back...
        again = answer(await mcp.call_tool("remember", {**SEAT, "source_kind": "user_message"}))
        assert (again["decision"], again["reason"]) == ("rejected", "tombstoned")
        # ...and a second forget finds nothing
        assert error(await mcp.call_tool("forget", {"fact_id": fact_id}))["code"] == "not_found"


async def test_bad_input_answers_a_tool_error_with_its_code(live: Any, tenant: Any) -> None:
    async with in_process(live.url, tenant.keys["agent"]) as mcp:
        # no configured user and none given
        assert error(await mcp.call_tool("list_facts", {}))["code"] == "invalid_request"
        # the API's own id rule, not resolved away as a path
        bad = error(await mcp.call_tool("list_facts", {"user": ".."}))
        assert (bad["code"], bad["status"]) == ("invalid_request", 422)
        nope = error(await mcp.call_tool("forget", {"user": uid(), "fact_id": "nope"}))
        assert (nope["code"], nope["status"]) == ("invalid_request", 422)
        # a statement over the API's limit is the API's 413
        long = await mcp.call_tool("remember", {"user": uid(), "statement": "x" * 600})
        assert error(long)["code"] == "payload_too_large"
    async with in_process(live.url, "mgk_not-a-key", uid()) as mcp:
        assert error(await mcp.call_tool("list_facts", {}))["code"] == "unauthorized"
        with pytest.raises(MCPError) as raised:
            await mcp.read_resource(f"memgate://users/{uid()}/facts")
        assert json.loads(raised.value.error.message)["error"]["code"] == "unauthorized"
    async with Client(build_server(Settings(url=live.url, user=uid()))) as mcp:
        no_key = error(await mcp.call_tool("list_facts", {}))
        assert (no_key["code"], no_key["status"]) == ("unauthorized", 401)
    async with in_process(live.url, tenant.keys["agent"], uid()) as mcp:
        with pytest.raises(MCPError):
            await mcp.read_resource("memgate://users/../facts")


async def test_retry_with_the_same_idempotency_key_writes_once(live: Any, tenant: Any) -> None:
    async with in_process(live.url, tenant.keys["agent"], uid()) as mcp:
        args = {**SEAT, "idempotency_key": "host-call-1"}
        first = answer(await mcp.call_tool("remember", args))
        second = answer(await mcp.call_tool("remember", args))
        assert first == second and first["decision"] == "written"
        listed = answer(await mcp.call_tool("list_facts", {}))["items"]
        assert [f["id"] for f in listed] == [first["fact_id"]]
        # without the key, the same statement is a new write: the gate merges it
        merged = answer(await mcp.call_tool("remember", SEAT))
        assert (merged["decision"], merged["fact_id"]) == ("merged", first["fact_id"])


async def test_isolation_two_users_and_two_tenants(
    live: Any, tenant: Any, other_tenant: Any
) -> None:
    alice, bob = uid(), uid()
    async with in_process(live.url, tenant.keys["agent"]) as mcp:
        fact_id = answer(await mcp.call_tool("remember", {**SEAT, "user": alice}))["fact_id"]
        # user B of the same tenant sees nothing of user A's
        assert answer(await mcp.call_tool("list_facts", {"user": bob}))["items"] == []
        recalled = answer(await mcp.call_tool("recall", {"user": bob, "query": QUERY}))
        assert recalled["fact_ids"] == [] and "window" not in recalled["context"]
        read = await mcp.read_resource(f"memgate://users/{bob}/facts")
        assert json.loads(read.contents[0].text)["items"] == []
        # nor can it be deleted as B's
        assert (
            error(await mcp.call_tool("forget", {"user": bob, "fact_id": fact_id}))["code"]
            == "not_found"
        )

    async with in_process(live.url, other_tenant.keys["agent"], alice) as mcp:
        # tenant B, same user id: another namespace entirely
        assert answer(await mcp.call_tool("list_facts", {}))["items"] == []
        recalled = answer(await mcp.call_tool("recall", {"query": QUERY}))
        assert recalled["fact_ids"] == []
        assert error(await mcp.call_tool("forget", {"fact_id": fact_id}))["code"] == "not_found"

    async with in_process(live.url, tenant.keys["agent"], alice) as mcp:
        assert [f["id"] for f in answer(await mcp.call_tool("list_facts", {}))["items"]] == [
            fact_id
        ]


# --------------------------------------------------------------------------------- stdio


def _env(live: Any, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMGATE_API")}
    return {**env, "MEMGATE_URL": live.url, "MEMGATE_LOG_LEVEL": "WARNING", **extra}


async def test_stdio(live: Any, tenant: Any, tmp_path: Path) -> None:
    user = uid()
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "app.mcp"],
        env=_env(
            live,
            MEMGATE_API_KEY=tenant.keys["agent"],
            MEMGATE_USER=user,
            MEMGATE_LOG_LEVEL="DEBUG",
        ),
    )
    errlog = tmp_path / "mcp-stderr.log"
    with errlog.open("w") as err:
        async with Client(stdio_client(params, errlog=err)) as mcp:
            fact_id = answer(await mcp.call_tool("remember", SEAT))["fact_id"]
            refused = await mcp.call_tool("remember", {"statement": f"password: {SECRET}"})
            assert answer(refused)["reason"] == "secret_detected"
            assert SECRET not in whole(refused)
            recalled = answer(await mcp.call_tool("recall", {"query": QUERY}))
            assert fact_id in recalled["fact_ids"]
            read = await mcp.read_resource(f"memgate://users/{user}/facts")
            assert [f["id"] for f in json.loads(read.contents[0].text)["items"]] == [fact_id]
            gone = answer(await mcp.call_tool("forget", {"fact_id": fact_id}))
            assert gone["status"] == "deleted"
            assert answer(await mcp.call_tool("list_facts", {}))["items"] == []
            missing = await mcp.call_tool("forget", {"fact_id": fact_id})
            assert error(missing)["code"] == "not_found"
    # neither the MCP server's log nor the API's holds the secret or the key
    for text in (errlog.read_text(), live.log_text()):
        assert SECRET not in text and tenant.keys["agent"] not in text


# ------------------------------------------------------------ retry after a lost answer


class _DropFirstAnswer:
    """A loopback HTTP/1.1 relay in front of the live API that forwards the first request
    and then closes the connection without answering: the write happened, its answer is
    lost, as when a network drops mid-request. Later requests are relayed whole."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.seen: list[tuple[str, str | None]] = []

    async def __aenter__(self) -> str:
        self._http = httpx.AsyncClient(base_url=self.upstream, timeout=30)
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def __aexit__(self, *exc: Any) -> None:
        self._server.close()
        await self._server.wait_closed()
        await self._http.aclose()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                headers = dict(
                    (k.strip().lower(), v.strip())
                    for k, v in (line.split(":", 1) for line in lines[1:] if ":" in line)
                )
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                self.seen.append((method, headers.get("idempotency-key")))
                forward = {
                    k: v
                    for k, v in headers.items()
                    if k in ("authorization", "idempotency-key", "content-type")
                }
                got = await self._http.request(method, target, headers=forward, content=body)
                if len(self.seen) == 1:
                    return  # the answer is lost: close without a byte
                writer.write(
                    f"HTTP/1.1 {got.status_code} X\r\ncontent-type: application/json\r\n"
                    f"content-length: {len(got.content)}\r\n\r\n".encode()
                    + got.content
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


async def test_a_lost_answer_is_retried_with_the_same_key_and_writes_once(
    live: Any, tenant: Any
) -> None:
    user = uid()
    relay = _DropFirstAnswer(live.url)
    async with relay as url, in_process(url, tenant.keys["agent"], user) as mcp:
        written = answer(await mcp.call_tool("remember", SEAT))
    assert written["decision"] == "written"
    # two attempts reached the API, under one Idempotency-Key: the second one replayed
    (m1, k1), (m2, k2) = relay.seen[:2]
    assert (m1, m2) == ("POST", "POST") and k1 and k1 == k2
    async with live.client() as http:
        facts = (await http.get(f"/v1/users/{user}/facts", headers=tenant.h())).json()["items"]
    assert [f["id"] for f in facts] == [written["fact_id"]]
    assert facts[0]["observations"] == 1  # not merged a second time


# ----------------------------------------------------------------------- streamable HTTP


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def mcp_http(live: Any, tenant: Any, tmp_path: Path) -> Iterator[str]:
    """The `memgate-mcp` console script with `--transport http`, configured with tenant A's
    key: a request with a bearer of its own is served with that key instead."""
    port = _free_port()
    log = tmp_path / "mcp-http.log"
    script = str(Path(sys.executable).parent / "memgate-mcp")
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [script, "--transport", "http", "--port", str(port)],
            env=_env(live, MEMGATE_API_KEY=tenant.keys["agent"]),
            stdout=subprocess.DEVNULL,
            stderr=out,
        )
    url = f"http://127.0.0.1:{port}/mcp"
    deadline = time.monotonic() + 60
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"MCP server exited: {log.read_text()[-2000:]}")
        try:
            httpx.get(url, timeout=2)
            break
        except httpx.HTTPError:
            if time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError("MCP server did not listen in 60 s") from None
            time.sleep(0.2)
    try:
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


class _Http:
    """A streamable-HTTP transport whose every request carries one Authorization header."""

    def __init__(self, url: str, authorization: str | None) -> None:
        self.url, self.authorization = url, authorization

    async def __aenter__(self) -> Any:
        headers = {"Authorization": self.authorization} if self.authorization else {}
        self._http = httpx2.AsyncClient(headers=headers, timeout=30)
        self._cm = streamable_http_client(self.url, http_client=self._http)
        return await self._cm.__aenter__()

    async def __aexit__(self, *exc: Any) -> None:
        await self._cm.__aexit__(*exc)
        await self._http.aclose()


async def test_streamable_http_serves_each_tenant_with_its_own_key(
    mcp_http: str, other_tenant: Any
) -> None:
    # the clients live in the test's own task (anyio's cancel scopes must exit where entered)
    async with (
        Client(_Http(mcp_http, None)) as a,
        Client(_Http(mcp_http, f"Bearer {other_tenant.keys['agent']}")) as b,
        Client(_Http(mcp_http, "Basic dXNlcjpwYXNz")) as basic,
    ):
        await _two_tenants(a, b, basic)


async def _two_tenants(a: Client, b: Client, basic: Client) -> None:
    user = uid()
    # no header: the server's own key (tenant A)
    fact_id = answer(await a.call_tool("remember", {**SEAT, "user": user}))["fact_id"]
    # tenant B's bearer replaces it: the same user id, the same MCP server, nothing of A's
    assert answer(await b.call_tool("list_facts", {"user": user}))["items"] == []
    recalled = answer(await b.call_tool("recall", {"user": user, "query": QUERY}))
    assert recalled["fact_ids"] == []
    read = await b.read_resource(f"memgate://users/{user}/facts")
    assert json.loads(read.contents[0].text)["items"] == []
    refused = error(await b.call_tool("forget", {"user": user, "fact_id": fact_id}))
    assert refused["code"] == "not_found"
    # tenant A still has it, and recalls it
    recalled = answer(await a.call_tool("recall", {"user": user, "query": QUERY}))
    assert recalled["fact_ids"] == [fact_id]
    # a credential that is not a bearer is refused, never served with the server's key
    assert error(await basic.call_tool("list_facts", {"user": user}))["code"] == "unauthorized"


def test_http_off_loopback_refuses_to_start_with_a_configured_key(live: Any, tenant: Any) -> None:
    """Off loopback the SDK's DNS-rebinding protection is off and any peer reaches the
    server: a request without a bearer would act with MEMGATE_API_KEY. The server then
    refuses to start, before it listens."""
    script = str(Path(sys.executable).parent / "memgate-mcp")
    args = [script, "--transport", "http", "--host", "0.0.0.0", "--port", str(_free_port())]
    try:
        done = subprocess.run(
            args,
            env=_env(live, MEMGATE_API_KEY=tenant.keys["agent"]),
            capture_output=True,
            timeout=30,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the MCP server served 0.0.0.0 with the configured key")
    assert done.returncode != 0
    assert b"MEMGATE_API_KEY" in done.stderr and tenant.keys["agent"].encode() not in done.stderr
