"""`python -m app.mcp [--transport stdio|http] [--host H] [--port P]` (also `memgate-mcp`):
the MCP server, configured by MEMGATE_URL, MEMGATE_API_KEY and MEMGATE_USER."""

from __future__ import annotations

import argparse
import os

import anyio
import uvicorn

from app.logs import configure_logging
from app.mcp.server import Settings, build_server

LOOPBACK = ("127.0.0.1", "localhost", "::1")  # where the SDK's DNS-rebinding check applies


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="memgate-mcp", description=__doc__)
    parser.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args(argv)
    # JSON lines on stderr, secrets redacted (stdout is the stdio transport's channel)
    configure_logging(os.environ.get("MEMGATE_LOG_LEVEL", "WARNING"))
    settings = Settings.from_env()
    if args.transport == "http" and settings.api_key and args.host not in LOOPBACK:
        # any peer (and, without the SDK's DNS-rebinding check, any web page) could then
        # call the tools with no bearer of its own and act with the configured key
        parser.error(
            f"--host {args.host} is not loopback: unset MEMGATE_API_KEY, so that every "
            "request brings its own bearer key (docs/mcp.md#configuration)"
        )
    server = build_server(settings)
    if args.transport == "stdio":
        anyio.run(server.run_stdio_async)
        return
    app = server.streamable_http_app(host=args.host)
    uvicorn.run(app, host=args.host, port=args.port, log_config=None, access_log=False)


if __name__ == "__main__":
    main()
