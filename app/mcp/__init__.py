"""The MCP server (docs/mcp.md): memgate's tools and resources for MCP hosts, over stdio and
streamable HTTP. It is a client of memgate's REST API, so the gate, auth, isolation,
idempotency and rate limits are the REST code path itself."""
