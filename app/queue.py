"""The arq queue: Redis connection settings and job names shared by API and workers."""

from __future__ import annotations

from urllib.parse import parse_qs, unquote, urlparse

from arq.connections import RedisSettings

QUEUE_NAME = "memgate:queue"
JOB_RUN = "run_job"  # runs one row of the jobs table (observe, reembed, cleanup, ...)


def redis_settings(url: str) -> RedisSettings:
    """arq settings from a redis:// , rediss:// or unix:// URL."""
    parsed = urlparse(url)
    if parsed.scheme == "unix":
        query = parse_qs(parsed.query)
        return RedisSettings(
            unix_socket_path=unquote(parsed.path),
            database=int(query.get("db", ["0"])[0]),
            password=parsed.password,
        )
    return RedisSettings(
        host=parsed.hostname or "localhost",
        port=parsed.port or 6379,
        database=int((parsed.path or "/0").lstrip("/") or 0),
        username=parsed.username,
        password=unquote(parsed.password) if parsed.password else None,
        ssl=parsed.scheme == "rediss",
    )
