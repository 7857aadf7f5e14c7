"""Liveness and readiness (docs/api.md#endpoints)."""

from __future__ import annotations

from typing import Literal

from app.api.schemas.common import Out


class Alive(Out):
    status: Literal["ok"]


class Ready(Out):
    status: Literal["ok"]
    postgres: Literal["ok"]
    redis: Literal["ok"]
