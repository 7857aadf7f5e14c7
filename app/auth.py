"""API keys (`mgk_…`) and user tokens (`mgu_…`): minting, hashing, verifying
(docs/isolation.md#user-tokens, docs/isolation.md#keys-and-roles).

Both are stored only as sha256 hashes. A user token is also signed (HMAC) and carries its
tenant, user and expiry, so a forged or expired token is refused before any lookup.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import uuid
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from app.memory.model import SENSITIVITY_RANK, KeyRights, Role, Sensitivity, sensitivity_allowed

KEY_PREFIX = "mgk_"
TOKEN_PREFIX = "mgu_"


@dataclass(frozen=True)
class Principal:
    """Who is calling: the key's id, tenant and rights."""

    key_id: uuid.UUID
    tenant_id: uuid.UUID
    role: Role
    scopes: tuple[str, ...] | None
    max_sensitivity: Sensitivity
    user_id: str | None = None  # user tokens only

    @property
    def rights(self) -> KeyRights:
        return KeyRights(
            key_id=self.key_id,
            role=self.role,
            allowed_scopes=self.scopes,
            max_sensitivity=self.max_sensitivity,
            user_id=self.user_id,
        )


def readable_scopes(who: Principal) -> list[str] | None:
    """The scopes this key reads: `global` and its own, or None for every scope."""
    return None if who.scopes is None else ["global", *who.scopes]


def visible_sensitivities(ceiling: Sensitivity) -> list[str]:
    return [s.value for s in SENSITIVITY_RANK if sensitivity_allowed(s, ceiling)]


def row_visible(who: Principal, row: Any) -> bool:
    """May this key (or user token) see a row with `scope` and `sensitivity` columns: a
    fact, a candidate, a session. The one check every route applies (else 404)."""
    scopes = readable_scopes(who)
    if scopes is not None and row["scope"] not in scopes:
        return False
    return sensitivity_allowed(row.get("sensitivity") or "normal", who.max_sensitivity)


def hash_secret(value: str) -> bytes:
    return hashlib.sha256(value.encode()).digest()


def new_api_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def mint_user_token(
    secret: bytes, tenant_id: uuid.UUID, user_id: str, token_id: uuid.UUID, expires_at: datetime
) -> str:
    payload = _b64(
        orjson.dumps(
            {
                "t": str(tenant_id),
                "u": user_id,
                "i": str(token_id),
                "e": int(expires_at.timestamp()),
            }
        )
    )
    sig = _b64(hmac.new(secret, payload.encode(), hashlib.sha256).digest()[:20])
    return f"{TOKEN_PREFIX}{payload}.{sig}"


@dataclass(frozen=True)
class TokenClaims:
    tenant_id: uuid.UUID
    user_id: str
    token_id: uuid.UUID
    expires_at: int


def verify_user_token(secret: bytes, token: str) -> TokenClaims | None:
    """The claims of a well-signed token, or None. Expiry is the caller's check."""
    if not token.startswith(TOKEN_PREFIX) or "." not in token:
        return None
    payload, _, sig = token[len(TOKEN_PREFIX) :].partition(".")
    expected = _b64(hmac.new(secret, payload.encode(), hashlib.sha256).digest()[:20])
    if not hmac.compare_digest(sig, expected):
        return None
    try:
        data = orjson.loads(_unb64(payload))
        return TokenClaims(
            uuid.UUID(data["t"]), str(data["u"]), uuid.UUID(data["i"]), int(data["e"])
        )
    except (ValueError, KeyError, TypeError):
        return None


def load_secret(configured: str | None, data_dir: Path) -> bytes:
    """The signing secret: MEMGATE_SECRET, else one generated once under DATA_DIR."""
    if configured:
        return configured.encode()
    path = data_dir / "secret.key"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_urlsafe(48))
        path.chmod(0o600)
    return path.read_text().strip().encode()
