"""Session memory in Redis (docs/sessions.md, docs/sessions.md#turns-and-slots): one hash, a capped
list of recent turns and a slots hash per session, every key prefixed by its tenant.

Key layout. A session's keys carry the hash tag `{tenant:user}`, so on a Redis Cluster all
of one user's session data lives in one slot (and different users spread over the
masters); the few per-tenant keys carry `{tenant}`. Ids cannot contain braces
(app.api.validation), so a tag never ends early; the kind comes before the session id,
so an id containing ':' can never collide with another session's key:

    mg:{tenant:user}:sess:{sid}         hash  user_id, scope, created_at, last_turn_at,
                                              last_user_turn_at, closed, closed_at, summary,
                                              hint, fact_id, turn_count, turn_seq
    mg:{tenant:user}:sess-turns:{sid}   list  JSON turns (already redacted), capped by LTRIM
    mg:{tenant:user}:sess-slots:{sid}   hash  slot → JSON value
    mg:{tenant:user}:user-sess          set   the user's session ids: export and forget-me
    mg:{tenant}:sess-owner:{sid}        str   the session's user (SET NX by its first turn):
                                              how a request naming only the sid finds its keys
    mg:{tenant}:sess-lock:{sid}         str   close claim (SET NX EX): one closer at a time
    mg:{tenant}:sess-open               zset  open sid → last activity (epoch s): the idle sweep

An open session has no Redis TTL: only a close (API or idle sweep) sets one, after its
summary is stored, so a session is never silently lost unsummarized. Commands are
Redis 6.2 compatible. An update of several keys of one user is one Lua script (atomic,
and legal on a cluster because the keys share a slot); the per-tenant keys are written in
a separate step, ordered so that a crash in between leaves at worst an index entry the
idle sweep drops (docs/sessions.md#redis-cluster).
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
from redis.asyncio.cluster import RedisCluster

Turn = dict[str, Any]
SessionRedis = Redis | RedisCluster
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


# Lua: several keys of one user, atomically (they share the {tenant:user} slot).
_OPEN = """
local created = redis.call('HSETNX', KEYS[1], 'user_id', ARGV[1])
redis.call('HSETNX', KEYS[1], 'scope', ARGV[2])
redis.call('HSETNX', KEYS[1], 'created_at', ARGV[3])
if created == 1 then redis.call('SADD', KEYS[2], ARGV[4]) end
local row = redis.call('HMGET', KEYS[1], 'scope', 'closed')
return {created, row[1], row[2]}
"""
_APPEND = """
redis.call('RPUSH', KEYS[2], ARGV[1])
redis.call('LTRIM', KEYS[2], -tonumber(ARGV[2]), -1)
redis.call('HSET', KEYS[1], 'last_turn_at', ARGV[3], 'closed', '0')
if ARGV[4] == '1' then redis.call('HSET', KEYS[1], 'last_user_turn_at', ARGV[3]) end
redis.call('HDEL', KEYS[1], 'closed_at')
local n = redis.call('HINCRBY', KEYS[1], 'turn_count', 1)
redis.call('PERSIST', KEYS[1])
redis.call('PERSIST', KEYS[2])
redis.call('PERSIST', KEYS[3])
redis.call('SADD', KEYS[4], ARGV[5])
return n
"""
# Compare-and-set of the slots hash: applied only if it still holds exactly what the
# caller merged onto (ARGV[1] = field count, then field/value pairs), like WATCH/MULTI.
_MERGE_SLOTS = """
local n = tonumber(ARGV[1])
if redis.call('HLEN', KEYS[1]) ~= n then return 0 end
for i = 0, n - 1 do
  if redis.call('HGET', KEYS[1], ARGV[2 + 2 * i]) ~= ARGV[3 + 2 * i] then return 0 end
end
local at = 2 + 2 * n
local sets = tonumber(ARGV[at])
for i = 1, sets do
  redis.call('HSET', KEYS[1], ARGV[at + 2 * i - 1], ARGV[at + 2 * i])
end
for i = at + 2 * sets + 1, #ARGV do redis.call('HDEL', KEYS[1], ARGV[i]) end
return 1
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
_MARK_CLOSED = """
redis.call('HSET', KEYS[1], 'closed', '1', 'closed_at', ARGV[1], 'summary', ARGV[2],
           'hint', ARGV[3], 'fact_id', ARGV[4])
for i = 1, 3 do redis.call('EXPIRE', KEYS[i], ARGV[5]) end
return 1
"""
_DELETE = """
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
redis.call('SREM', KEYS[4], ARGV[1])
return 1
"""


class SessionStore:
    """Redis repository for sessions of every tenant (keys carry the tenant and user).

    `redis` is a `Redis` or a `RedisCluster` client (MEMGATE_SESSION_REDIS_CLUSTER): only
    single-key commands, single-slot scripts and non-transactional pipelines are used.
    """

    def __init__(self, redis: SessionRedis) -> None:
        self.redis = redis

    # -- keys
    @staticmethod
    def tag(tenant_id: uuid.UUID, user_id: str) -> str:
        return f"mg:{{{tenant_id}:{user_id}}}"

    @classmethod
    def key(cls, tenant_id: uuid.UUID, user_id: str, sid: str) -> str:
        return f"{cls.tag(tenant_id, user_id)}:sess:{sid}"

    @classmethod
    def turns_key(cls, tenant_id: uuid.UUID, user_id: str, sid: str) -> str:
        return f"{cls.tag(tenant_id, user_id)}:sess-turns:{sid}"

    @classmethod
    def slots_key(cls, tenant_id: uuid.UUID, user_id: str, sid: str) -> str:
        return f"{cls.tag(tenant_id, user_id)}:sess-slots:{sid}"

    @classmethod
    def user_key(cls, tenant_id: uuid.UUID, user_id: str) -> str:
        return f"{cls.tag(tenant_id, user_id)}:user-sess"

    @staticmethod
    def owner_key(tenant_id: uuid.UUID, sid: str) -> str:
        return f"mg:{{{tenant_id}}}:sess-owner:{sid}"

    @staticmethod
    def lock_key(tenant_id: uuid.UUID, sid: str) -> str:
        return f"mg:{{{tenant_id}}}:sess-lock:{sid}"

    @staticmethod
    def open_key(tenant_id: uuid.UUID) -> str:
        return f"mg:{{{tenant_id}}}:sess-open"

    def _data_keys(self, tenant_id: uuid.UUID, user_id: str, sid: str) -> list[str]:
        return [
            self.key(tenant_id, user_id, sid),
            self.turns_key(tenant_id, user_id, sid),
            self.slots_key(tenant_id, user_id, sid),
        ]

    async def _script(self, body: str, keys: list[str], args: list[Any]) -> Any:
        # EVALSHA, loading the script on NOSCRIPT (redis-py types it for Redis only; on a
        # RedisCluster it routes by the keys' slot)
        script = self.redis.register_script(body)  # type: ignore[misc]
        return await script(keys=keys, args=args)

    async def owner(self, tenant_id: uuid.UUID, sid: str) -> str | None:
        """The user whose session `sid` is, if it exists in this tenant."""
        raw = await _aw(self.redis.get(self.owner_key(tenant_id, sid)))
        return _s(raw) if raw is not None else None

    # -- writes
    async def open(
        self, tenant_id: uuid.UUID, sid: str, user_id: str, scope: str, now: datetime
    ) -> Opened:
        """Create the session if it does not exist; return who owns it.

        The owner key is taken with SET NX: of two concurrent first turns exactly one
        fixes the user, and both see the same owner; HSETNX then fixes the scope.
        """
        okey = self.owner_key(tenant_id, sid)
        owner: str | None = None
        while owner is None:
            if await _aw(self.redis.set(okey, user_id, nx=True)):
                owner = user_id
            else:
                owner = await self.owner(tenant_id, sid)  # None: it expired in between
        if owner != user_id:  # someone else's session: report its owner, change nothing
            scope_raw, closed = await _aw(
                self.redis.hmget(self.key(tenant_id, owner, sid), ["scope", "closed"])
            )
            return Opened(owner, _s(scope_raw or scope), False, _s(closed or b"0") == "1")
        created, owner_scope, closed = await self._script(
            _OPEN,
            [self.key(tenant_id, owner, sid), self.user_key(tenant_id, owner)],
            [user_id, scope, now.isoformat(), sid],
        )
        return Opened(owner, _s(owner_scope), bool(created), _s(closed or b"0") == "1")

    async def next_turn_number(self, tenant_id: uuid.UUID, user_id: str, sid: str) -> int:
        key = self.key(tenant_id, user_id, sid)
        return int(await _aw(self.redis.hincrby(key, "turn_seq", 1)))

    async def has_turn(self, tenant_id: uuid.UUID, user_id: str, sid: str, turn_id: str) -> bool:
        """A retried turn (same turn_id among the kept ones) is not appended twice."""
        key = self.turns_key(tenant_id, user_id, sid)
        for raw in await _aw(self.redis.lrange(key, 0, -1)):
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
        it, and an open session must never carry a TTL. The tenant's keys come first: a
        crash after them leaves an open-set entry the sweep resolves, never an open
        session the sweep cannot see. Returns the total turn count.
        """
        pipe = self.redis.pipeline(transaction=False)
        pipe.persist(self.owner_key(tenant_id, sid))
        pipe.zadd(self.open_key(tenant_id), {sid: now.timestamp()})
        await pipe.execute()
        keys = [*self._data_keys(tenant_id, user_id, sid), self.user_key(tenant_id, user_id)]
        args = [
            orjson.dumps(turn),
            max_turns,
            now.isoformat(),
            "1" if turn.get("role") == "user" else "0",
            sid,
        ]
        return int(await self._script(_APPEND, keys, args))

    async def merge_slots(
        self,
        tenant_id: uuid.UUID,
        user_id: str,
        sid: str,
        patch: Mapping[str, Any],
        max_bytes: int,
    ) -> dict[str, Any]:
        """JSON merge-patch of the slots (RFC 7396 at the top level: null removes a slot).

        The merged result is checked against `max_bytes` before anything is written, and
        written only if the slots are still what it merged onto (a compare-and-set
        script): a concurrent merge makes this one start again, so two patches that each
        fit can never together store slots over the limit. Raises SlotsTooLarge (nothing
        written) when the merge would not fit.
        """
        k = self.slots_key(tenant_id, user_id, sid)
        sets = {name: orjson.dumps(v) for name, v in patch.items() if v is not None}
        drops = [name for name, v in patch.items() if v is None]
        while True:
            raw = await _aw(self.redis.hgetall(k))
            merged = _decode_slots(raw)
            for name in drops:
                merged.pop(name, None)
            merged.update({name: orjson.loads(v) for name, v in sets.items()})
            merged = dict(sorted(merged.items()))
            size = len(orjson.dumps(merged))
            if size > max_bytes:
                raise SlotsTooLarge(size)
            args: list[Any] = [len(raw)]
            for field_name, value in raw.items():
                args += [field_name, value]
            args.append(len(sets))
            for name, value in sets.items():
                args += [name, value]
            args += drops
            if await self._script(_MERGE_SLOTS, [k], args):
                return merged
            # another merge landed in between: merge onto it

    # -- reads
    async def get(
        self, tenant_id: uuid.UUID, sid: str, *, with_turns: bool = True
    ) -> Session | None:
        user_id = await self.owner(tenant_id, sid)
        if user_id is None:
            return None
        keys = self._data_keys(tenant_id, user_id, sid)
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
        raw = await _aw(
            self.redis.zrangebyscore(
                self.open_key(tenant_id), "-inf", before.timestamp(), start=0, num=limit
            )
        )
        return [_s(v) for v in raw]

    async def drop_open(self, tenant_id: uuid.UUID, sid: str) -> None:
        """Take `sid` out of the idle sweep's index (its data is gone or closed)."""
        await _aw(self.redis.zrem(self.open_key(tenant_id), sid))

    async def count_open(self, tenant_id: uuid.UUID) -> int:
        return int(await _aw(self.redis.zcard(self.open_key(tenant_id))))

    async def user_sessions(self, tenant_id: uuid.UUID, user_id: str) -> list[str]:
        """The user's sessions still in Redis; ids whose data expired are pruned."""
        ukey = self.user_key(tenant_id, user_id)
        sids = sorted(_s(v) for v in await _aw(self.redis.smembers(ukey)))
        if not sids:
            return []
        pipe = self.redis.pipeline(transaction=False)
        for sid in sids:
            pipe.exists(self.key(tenant_id, user_id, sid))
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
        ok = await _aw(self.redis.set(self.lock_key(tenant_id, sid), token, nx=True, ex=ttl_s))
        return token if ok else None

    async def release(self, tenant_id: uuid.UUID, sid: str, token: str) -> None:
        """Delete the claim only if it is still ours (compare-and-delete script)."""
        await self._script(_RELEASE, [self.lock_key(tenant_id, sid)], [token])

    async def mark_closed(
        self,
        tenant_id: uuid.UUID,
        user_id: str,
        sid: str,
        now: datetime,
        *,
        summary: str | None,
        hint: str | None,
        fact_id: str | None,
        retain_s: int,
    ) -> None:
        """Record the summary, and only now start the retention TTL; then leave the open
        set (a crash in between: the sweep finds it closed and drops the entry)."""
        ttl = max(1, retain_s)
        args = [now.isoformat(), summary or "", hint or "", fact_id or "", ttl]
        await self._script(_MARK_CLOSED, self._data_keys(tenant_id, user_id, sid), args)
        pipe = self.redis.pipeline(transaction=False)
        pipe.zrem(self.open_key(tenant_id), sid)
        pipe.expire(self.owner_key(tenant_id, sid), ttl)
        await pipe.execute()

    # -- erase
    async def delete(self, tenant_id: uuid.UUID, sid: str, user_id: str) -> None:
        keys = [*self._data_keys(tenant_id, user_id, sid), self.user_key(tenant_id, user_id)]
        await self._script(_DELETE, keys, [sid])
        pipe = self.redis.pipeline(transaction=False)
        pipe.zrem(self.open_key(tenant_id), sid)
        pipe.delete(self.lock_key(tenant_id, sid))
        await pipe.execute()
        # the owner key last, and only if it is still this user's (compare-and-delete)
        await self._script(_RELEASE, [self.owner_key(tenant_id, sid)], [user_id])

    async def forget_user(self, tenant_id: uuid.UUID, user_id: str) -> int:
        """Delete every session of the user (forget-me); returns how many existed."""
        known = sorted(
            _s(v) for v in await _aw(self.redis.smembers(self.user_key(tenant_id, user_id)))
        )
        sids = await self.user_sessions(tenant_id, user_id)
        for sid in known:  # expired ones too: their owner keys may outlive the data
            await self.delete(tenant_id, sid, user_id)
        await _aw(self.redis.delete(self.user_key(tenant_id, user_id)))
        return len(sids)


def _decode_slots(raw: Mapping[Any, Any]) -> dict[str, Any]:
    return {_s(k): orjson.loads(v) for k, v in sorted(raw.items(), key=lambda kv: _s(kv[0]))}
