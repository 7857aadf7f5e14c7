"""Session memory in Redis (docs/sessions.md, docs/sessions.md#turns-and-slots): one hash, a capped
list of recent turns and a slots hash per session, every key prefixed by its tenant.

Key layout (the kind comes before the id, so a session id containing ':' can never
collide with another session's key):

    mg:{tenant}:sess:{sid}          hash  user_id, scope, created_at, last_turn_at,
                                          last_user_turn_at, closed, closed_at, summary,
                                          hint, fact_id, turn_count, turn_seq
    mg:{tenant}:sess-turns:{sid}    list  JSON turns (already redacted), capped by LTRIM
    mg:{tenant}:sess-slots:{sid}    hash  slot → JSON value
    mg:{tenant}:sess-lock:{sid}     str   close claim (SET NX EX): one closer at a time
    mg:{tenant}:sess-open           zset  open sid → last activity (epoch s): the idle sweep
    mg:{tenant}:user-sess:{user}    set   the user's session ids: export and forget-me

An open session has no Redis TTL: only a close (API or idle sweep) sets one, after its
summary is stored, so a session is never silently lost unsummarized. Commands are
Redis 6.2 compatible; multi-key updates go through MULTI/EXEC pipelines.
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar, cast

import orjson
from redis.asyncio import Redis
from redis.exceptions import WatchError

Turn = dict[str, Any]
T = TypeVar("T")


async def _aw(result: Awaitable[T] | T) -> T:
    """redis-py types its async commands as `Awaitable[T] | T`; on redis.asyncio they are
    always awaitable."""
    return await cast(Awaitable[T], result)


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _dt(value: Any) -> datetime | None:
    return datetime.fromisoformat(_s(value)) if value else None


class SlotsTooLarge(Exception):
    """A slot merge that would take the session's slots over their limit (nothing written)."""

    def __init__(self, size: int) -> None:
        super().__init__(f"slots would be {size} bytes")
        self.size = size


@dataclass
class Session:
    id: str
    user_id: str
    scope: str
    created_at: datetime
    last_turn_at: datetime | None
    last_user_turn_at: datetime | None
    closed: bool
    closed_at: datetime | None = None
    summary: str | None = None
    hint: str | None = None
    fact_id: str | None = None
    turn_count: int = 0
    turns: list[Turn] = field(default_factory=list)
    slots: dict[str, Any] = field(default_factory=dict)

    def json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "user_id": self.user_id,
            "scope": self.scope,
            "slots": self.slots,
            "turns": self.turns,
            "turn_count": self.turn_count,
            "created_at": self.created_at.isoformat(),
            "last_turn_at": self.last_turn_at.isoformat() if self.last_turn_at else None,
            "closed": self.closed,
            "closed_at": self.closed_at.isoformat() if self.closed_at else None,
            "summary": self.summary,
            "resume_hint": self.hint,
            "fact_id": self.fact_id,
        }


@dataclass(frozen=True)
class Opened:
    """The session's owner and scope as fixed by its first turn; `created` on that turn."""

    user_id: str
    scope: str
    created: bool
    closed: bool


class SessionStore:
    """Redis repository for sessions of every tenant (keys carry the tenant)."""

    def __init__(self, redis: Redis) -> None:
        self.redis = redis

    # -- keys
    @staticmethod
    def key(tenant_id: uuid.UUID, sid: str) -> str:
        return f"mg:{tenant_id}:sess:{sid}"

    @staticmethod
    def turns_key(tenant_id: uuid.UUID, sid: str) -> str:
        return f"mg:{tenant_id}:sess-turns:{sid}"

    @staticmethod
    def slots_key(tenant_id: uuid.UUID, sid: str) -> str:
        return f"mg:{tenant_id}:sess-slots:{sid}"

    @staticmethod
    def lock_key(tenant_id: uuid.UUID, sid: str) -> str:
        return f"mg:{tenant_id}:sess-lock:{sid}"

    @staticmethod
    def open_key(tenant_id: uuid.UUID) -> str:
        return f"mg:{tenant_id}:sess-open"

    @staticmethod
    def user_key(tenant_id: uuid.UUID, user_id: str) -> str:
        return f"mg:{tenant_id}:user-sess:{user_id}"

    def _data_keys(self, tenant_id: uuid.UUID, sid: str) -> list[str]:
        return [
            self.key(tenant_id, sid),
            self.turns_key(tenant_id, sid),
            self.slots_key(tenant_id, sid),
        ]

    # -- writes
    async def open(
        self, tenant_id: uuid.UUID, sid: str, user_id: str, scope: str, now: datetime
    ) -> Opened:
        """Create the session if it does not exist; return who owns it.

        HSETNX inside MULTI: of two concurrent first turns exactly one creates it, and
        both see the same owner.
        """
        k = self.key(tenant_id, sid)
        pipe = self.redis.pipeline(transaction=True)
        pipe.hsetnx(k, "user_id", user_id)
        pipe.hsetnx(k, "scope", scope)
        pipe.hsetnx(k, "created_at", now.isoformat())
        pipe.hmget(k, ["user_id", "scope", "closed"])
        created, _, _, (owner, owner_scope, closed) = await pipe.execute()
        if created:
            await _aw(self.redis.sadd(self.user_key(tenant_id, user_id), sid))
        return Opened(_s(owner), _s(owner_scope), bool(created), _s(closed or b"0") == "1")

    async def next_turn_number(self, tenant_id: uuid.UUID, sid: str) -> int:
        return int(await _aw(self.redis.hincrby(self.key(tenant_id, sid), "turn_seq", 1)))

    async def has_turn(self, tenant_id: uuid.UUID, sid: str, turn_id: str) -> bool:
        """A retried turn (same turn_id among the kept ones) is not appended twice."""
        for raw in await _aw(self.redis.lrange(self.turns_key(tenant_id, sid), 0, -1)):
            if orjson.loads(raw).get("turn_id") == turn_id:
                return True
        return False

    async def append_turn(
        self,
        tenant_id: uuid.UUID,
        sid: str,
        user_id: str,
        turn: Turn,
        now: datetime,
        max_turns: int,
    ) -> int:
        """Append a (redacted) turn, cap the list, and (re)open the session.

        PERSIST on every key: a turn to a closed session that is still retained reopens
        it, and an open session must never carry a TTL. Returns the total turn count.
        """
        keys = self._data_keys(tenant_id, sid)
        fields = {"last_turn_at": now.isoformat(), "closed": "0"}
        if turn.get("role") == "user":
            fields["last_user_turn_at"] = now.isoformat()
        pipe = self.redis.pipeline(transaction=True)
        pipe.rpush(keys[1], orjson.dumps(turn))
        pipe.ltrim(keys[1], -max_turns, -1)
        pipe.hset(keys[0], mapping=fields)
        pipe.hdel(keys[0], "closed_at")
        pipe.hincrby(keys[0], "turn_count", 1)
        for k in keys:
            pipe.persist(k)
        pipe.zadd(self.open_key(tenant_id), {sid: now.timestamp()})
        pipe.sadd(self.user_key(tenant_id, user_id), sid)
        results = await pipe.execute()
        return int(results[4])

    async def merge_slots(
        self, tenant_id: uuid.UUID, sid: str, patch: Mapping[str, Any], max_bytes: int
    ) -> dict[str, Any]:
        """JSON merge-patch of the slots (RFC 7396 at the top level: null removes a slot).

        The merged result is checked against `max_bytes` before anything is written, under
        WATCH: a concurrent merge makes this one start again, so two patches that each fit
        can never together store slots over the limit. Raises SlotsTooLarge (nothing
        written) when the merge would not fit.
        """
        k = self.slots_key(tenant_id, sid)
        sets = {name: orjson.dumps(v) for name, v in patch.items() if v is not None}
        drops = [name for name, v in patch.items() if v is None]
        async with self.redis.pipeline(transaction=True) as pipe:
            while True:
                try:
                    await pipe.watch(k)
                    merged = _decode_slots(await _aw(pipe.hgetall(k)))
                    for name in drops:
                        merged.pop(name, None)
                    merged.update({name: orjson.loads(v) for name, v in sets.items()})
                    merged = dict(sorted(merged.items()))
                    size = len(orjson.dumps(merged))
                    if size > max_bytes:
                        await pipe.unwatch()  # type: ignore[no-untyped-call]
                        raise SlotsTooLarge(size)
                    pipe.multi()  # type: ignore[no-untyped-call]
                    if sets:
                        pipe.hset(k, mapping=sets)
                    if drops:
                        pipe.hdel(k, *drops)
                    await pipe.execute()
                    return merged
                except WatchError:
                    continue  # another merge landed in between: merge onto it

    # -- reads
    async def get(
        self, tenant_id: uuid.UUID, sid: str, *, with_turns: bool = True
    ) -> Session | None:
        keys = self._data_keys(tenant_id, sid)
        pipe = self.redis.pipeline(transaction=False)
        pipe.hgetall(keys[0])
        pipe.lrange(keys[1], 0, -1) if with_turns else pipe.exists(keys[1])
        pipe.hgetall(keys[2])
        meta_raw, turns_raw, slots_raw = await pipe.execute()
        meta = {_s(k): _s(v) for k, v in meta_raw.items()}
        if "user_id" not in meta:
            return None
        created = _dt(meta.get("created_at"))
        assert created is not None
        return Session(
            id=sid,
            user_id=meta["user_id"],
            scope=meta.get("scope", "global"),
            created_at=created,
            last_turn_at=_dt(meta.get("last_turn_at")),
            last_user_turn_at=_dt(meta.get("last_user_turn_at")),
            closed=meta.get("closed") == "1",
            closed_at=_dt(meta.get("closed_at")),
            summary=meta.get("summary") or None,
            hint=meta.get("hint") or None,
            fact_id=meta.get("fact_id") or None,
            turn_count=int(meta.get("turn_count", 0)),
            turns=[orjson.loads(t) for t in turns_raw] if with_turns else [],
            slots=_decode_slots(slots_raw),
        )

    async def idle(self, tenant_id: uuid.UUID, before: datetime, limit: int) -> list[str]:
        """Open sessions whose last activity is at or before `before`, oldest first."""
        raw = await self.redis.zrangebyscore(
            self.open_key(tenant_id), "-inf", before.timestamp(), start=0, num=limit
        )
        return [_s(v) for v in raw]

    async def count_open(self, tenant_id: uuid.UUID) -> int:
        return int(await self.redis.zcard(self.open_key(tenant_id)))

    async def user_sessions(self, tenant_id: uuid.UUID, user_id: str) -> list[str]:
        """The user's sessions still in Redis; ids whose data expired are pruned."""
        ukey = self.user_key(tenant_id, user_id)
        sids = sorted(_s(v) for v in await _aw(self.redis.smembers(ukey)))
        if not sids:
            return []
        pipe = self.redis.pipeline(transaction=False)
        for sid in sids:
            pipe.exists(self.key(tenant_id, sid))
        alive = await pipe.execute()
        gone = [sid for sid, ok in zip(sids, alive, strict=True) if not ok]
        if gone:
            await _aw(self.redis.srem(ukey, *gone))
        return [sid for sid, ok in zip(sids, alive, strict=True) if ok]

    # -- close
    async def claim(self, tenant_id: uuid.UUID, sid: str, ttl_s: int = 120) -> str | None:
        """Claim the right to close this session (API close and every sweeping worker
        compete here). The TTL frees a claim whose holder died; the session then stays
        in the open set and the next sweep retries it."""
        token = secrets.token_hex(8)
        ok = await self.redis.set(self.lock_key(tenant_id, sid), token, nx=True, ex=ttl_s)
        return token if ok else None

    async def release(self, tenant_id: uuid.UUID, sid: str, token: str) -> None:
        """Delete the claim only if it is still ours (WATCH/MULTI compare-and-delete)."""
        k = self.lock_key(tenant_id, sid)
        async with self.redis.pipeline(transaction=True) as pipe:
            try:
                await pipe.watch(k)
                current = await pipe.get(k)
                if current is None or _s(current) != token:
                    await pipe.unwatch()  # type: ignore[no-untyped-call]
                    return
                pipe.multi()  # type: ignore[no-untyped-call]
                pipe.delete(k)
                await pipe.execute()
            except Exception:  # WatchError: someone else's claim now; theirs to release
                return

    async def mark_closed(
        self,
        tenant_id: uuid.UUID,
        sid: str,
        now: datetime,
        *,
        summary: str | None,
        hint: str | None,
        fact_id: str | None,
        retain_s: int,
    ) -> None:
        """Record the summary, leave the open set, and only now start the retention TTL."""
        keys = self._data_keys(tenant_id, sid)
        fields = {
            "closed": "1",
            "closed_at": now.isoformat(),
            "summary": summary or "",
            "hint": hint or "",
            "fact_id": fact_id or "",
        }
        pipe = self.redis.pipeline(transaction=True)
        pipe.hset(keys[0], mapping=fields)
        pipe.zrem(self.open_key(tenant_id), sid)
        for k in keys:
            pipe.expire(k, max(1, retain_s))
        await pipe.execute()

    # -- erase
    async def delete(self, tenant_id: uuid.UUID, sid: str, user_id: str) -> None:
        pipe = self.redis.pipeline(transaction=True)
        pipe.delete(*self._data_keys(tenant_id, sid), self.lock_key(tenant_id, sid))
        pipe.zrem(self.open_key(tenant_id), sid)
        pipe.srem(self.user_key(tenant_id, user_id), sid)
        await pipe.execute()

    async def forget_user(self, tenant_id: uuid.UUID, user_id: str) -> int:
        """Delete every session of the user (forget-me); returns how many existed."""
        sids = await self.user_sessions(tenant_id, user_id)
        for sid in sids:
            await self.delete(tenant_id, sid, user_id)
        await self.redis.delete(self.user_key(tenant_id, user_id))
        return len(sids)


def _decode_slots(raw: Mapping[Any, Any]) -> dict[str, Any]:
    return {_s(k): orjson.loads(v) for k, v in sorted(raw.items(), key=lambda kv: _s(kv[0]))}
