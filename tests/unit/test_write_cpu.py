"""The write path's CPU savings change nothing: each shortcut gives what the code it
replaced gave (issue 19)."""

from __future__ import annotations

import dataclasses
import random
import uuid
from datetime import UTC, datetime
from typing import Any

import numpy as np

from app import logs
from app.memory.model import Candidate, ExistingFact, FactType, SourceKind, Status
from app.memory.normalize import statement_key, tombstone_hashes
from app.writer import _f64, _FreeSubject, _keys_and_hashes, _with_similarity


class _Reference:
    """`_FreeSubject` as it was before issue 19 (rows by model in lists, numpy scalars
    read one by one): the ranking the optimised one must reproduce exactly."""

    def __init__(self) -> None:
        self.ids: list[uuid.UUID] = []
        self.by_key: dict[str, list[int]] = {}
        self.by_model: dict[str | None, list[int]] = {}
        self.mat: Any = None
        self.sq: Any = None
        self.has: Any = None

    def add(self, fact_id: uuid.UUID, key: str, vector: Any, model: str | None) -> None:
        n = len(self.ids)
        self.ids.append(fact_id)
        self.by_key.setdefault(key, []).append(n)
        self.by_model.setdefault(model, []).append(n)
        v = np.asarray(vector, dtype=np.float32).astype(np.float64) if vector is not None else None
        if self.mat is None:
            self.mat = np.zeros((64, len(v) if v is not None else 1))
            self.sq = np.zeros(64)
            self.has = np.zeros(64, dtype=bool)
        if v is not None and not self.has[:n].any() and self.mat.shape[1] != v.shape[0]:
            self.mat = np.zeros((len(self.sq), v.shape[0]))
        if n == len(self.sq):
            self.mat = np.concatenate([self.mat, np.zeros_like(self.mat)])
            self.sq = np.concatenate([self.sq, np.zeros_like(self.sq)])
            self.has = np.concatenate([self.has, np.zeros_like(self.has)])
        if v is not None and v.shape[0] == self.mat.shape[1]:
            self.mat[n] = v
            self.sq[n] = float(np.dot(v, v))
            self.has[n] = True

    def ranked(
        self, key: str, vector: Any, model: str | None, limit: int
    ) -> list[tuple[bool, float | None, uuid.UUID]]:
        n = len(self.ids)
        if n == 0:
            return []
        miss = np.ones(n, dtype=bool)
        miss[self.by_key.get(key, [])] = False
        dist = np.zeros(n)
        null = np.ones(n, dtype=bool)
        if vector is not None and model is not None and len(vector) == self.mat.shape[1]:
            q = np.asarray(vector, dtype=np.float32).astype(np.float64)
            same = np.zeros(n, dtype=bool)
            same[self.by_model.get(model, [])] = True
            same &= self.has[:n]
            with np.errstate(invalid="ignore", divide="ignore"):
                sim = (self.mat[:n] @ q) / np.sqrt(self.sq[:n] * float(np.dot(q, q)))
            dist = np.where(same, 1.0 - np.clip(sim, -1.0, 1.0), 0.0)
            null = ~same
        order = np.lexsort((dist, null, miss))
        if n > limit:
            c = order[limit - 1]
            ahead = (miss < miss[c]) | ((miss == miss[c]) & (null < null[c]))
            level = (miss == miss[c]) & (null == null[c])
            order = np.nonzero(ahead | (level & (null | (dist <= dist[c]))))[0]
        return [
            (not bool(miss[i]), None if null[i] else float(dist[i]), self.ids[i]) for i in order
        ]


def _same(a: list[tuple[bool, float | None, uuid.UUID]], b: list[Any]) -> bool:
    """Equal entries, in the same order, of the same Python types (a numpy scalar where
    a float was would reach the gate's arithmetic and the JSON of audit details)."""
    return a == b and all(
        type(x[0]) is type(y[0]) and type(x[1]) is type(y[1]) for x, y in zip(a, b, strict=True)
    )


def test_free_subject_ranks_as_before() -> None:
    """Random groups with repeated statement keys, duplicate vectors (ties at the limit),
    facts without a vector, two embedding models and a vector of another width: every
    ranking, with and without the caller's converted vector, is the reference's."""
    rng = random.Random(19)
    nprng = np.random.default_rng(19)
    for trial in range(40):
        dim = rng.choice([8, 16])
        ref, new = _Reference(), _FreeSubject()
        pool = nprng.standard_normal((6, dim)).astype(np.float32).tolist()  # repeats: ties
        models = ["usem3-512", "other"] if trial % 3 == 0 else ["usem3-512"]
        for i in range(rng.randrange(1, 90)):
            key = f"k{rng.randrange(12)}"
            roll = rng.random()
            if roll < 0.1:
                vector = None
            elif roll < 0.15:
                vector = nprng.standard_normal(dim + 4).astype(np.float32).tolist()
            elif roll < 0.5:
                vector = pool[rng.randrange(len(pool))]
            else:
                vector = nprng.standard_normal(dim).astype(np.float32).tolist()
            model = None if vector is None and rng.random() < 0.5 else rng.choice(models)
            for limit in (1, 3, 20):
                for probe_model in (model, "usem3-512", "unseen"):
                    want = ref.ranked(key, vector, probe_model, limit)
                    assert _same(new.ranked(key, vector, probe_model, limit), want)
                    if vector is not None:
                        got = new.ranked(key, vector, probe_model, limit, _f64(vector))
                        assert _same(got, want)
            fact_id = uuid.UUID(int=i)
            ref.add(fact_id, key, vector, model)
            arr = _f64(vector) if vector is not None and rng.random() < 0.5 else None
            new.add(fact_id, key, vector, model, arr)


def test_with_similarity_is_replace() -> None:
    f = ExistingFact(
        id=uuid.uuid4(),
        scope="global",
        type=FactType.SEMANTIC,
        predicate=None,
        value="tea",
        statement="The user likes tea",
        source_kind=SourceKind.USER_MESSAGE,
        confidence=0.7,
        valid_from=datetime(2026, 1, 1, tzinfo=UTC),
        status=Status.ACTIVE,
        contested=True,
        similarity=0.25,
    )
    for similarity in (None, 0.0, 0.93):
        got = _with_similarity(f, similarity)
        want = dataclasses.replace(f, similarity=similarity)
        assert got == want and hash(got) == hash(want) and got is not f
        assert vars(got) == vars(want)
    assert f.similarity == 0.25  # the original is untouched
    # the shortcut holds only for a plain frozen dataclass: no __post_init__, no slots
    assert not hasattr(ExistingFact, "__post_init__")
    assert "__slots__" not in vars(ExistingFact)
    assert all(f.init for f in dataclasses.fields(ExistingFact))


def test_keys_and_hashes_are_those_computed_one_by_one() -> None:
    cs = [
        Candidate("u", FactType.SEMANTIC, "Markdown 表格。"),
        Candidate("u", FactType.SEMANTIC, "  The user likes TEA!  ", scope="project:x"),
        Candidate("u", FactType.PROFILE, "editor vim", predicate="editor", value="vim"),
        Candidate("u", FactType.SEMANTIC, "。。。"),  # an empty key: no statement hash
    ]
    keys, hashes = _keys_and_hashes(cs)
    assert keys == [statement_key(c.statement) for c in cs]
    assert hashes == [tombstone_hashes(c.scope, c.predicate, c.value, c.statement) for c in cs]


def test_log_scrub_remembers_clean_strings_only() -> None:
    """The log's last line of defence redacts a secret on every line, and caches only
    strings it found clean."""
    secret = "api key sk-proj-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e"
    clean = "POST /v1/users/{user_id}/facts 201 12.3ms"
    for _ in range(3):
        out = logs.scrub_secrets(None, "info", {"event": secret, "level": "info"})
        assert "sk-proj-4f9a8b7c" not in out["event"] and out["event"] != secret
        assert logs.scrub_secrets(None, "info", {"event": clean})["event"] == clean
    assert secret not in logs._clean
    assert clean in logs._clean
    for n in range(logs._CLEAN_MAX + 10):  # bounded
        logs._scrub_text(f"GET /healthz 200 {n}")
    assert len(logs._clean) <= logs._CLEAN_MAX


def test_log_scrub_skips_only_what_logging_writes() -> None:
    """The time and the level are the logging's own and pass as they are; every other
    field, a bound trace id included, is still checked."""
    secret = "api key sk-proj-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e"
    stamp = "2026-12-06T08:37:14.123456Z"
    out = logs.scrub_secrets(
        None,
        "info",
        {"event": "x", "timestamp": stamp, "level": "info", "trace_id": secret, "k": secret},
    )
    assert out["timestamp"] is stamp and out["level"] == "info"
    assert "sk-proj-4f9a8b7c" not in out["trace_id"] and "sk-proj-4f9a8b7c" not in out["k"]


def test_resolve_with_the_callers_statement_key() -> None:
    """`gate.resolve(..., statement=key)` decides as it does computing the key itself."""
    from app.memory import gate
    from app.memory.policy import Policy

    now = datetime(2026, 1, 1, tzinfo=UTC)
    policy = Policy()

    def fact(statement: str, similarity: float | None) -> ExistingFact:
        return ExistingFact(
            id=uuid.uuid4(),
            scope="global",
            type=FactType.SEMANTIC,
            predicate=None,
            value=None,
            statement=statement,
            source_kind=SourceKind.USER_MESSAGE,
            confidence=0.6,
            valid_from=now,
            similarity=similarity,
        )

    pools = [
        [],
        [fact("the user likes tea.", 0.99)],  # the same key: a merge
        [fact("The user likes green tea", 0.97), fact("The user hates tea", 0.99)],
    ]
    kind = SourceKind.USER_MESSAGE
    c = Candidate("u", FactType.SEMANTIC, "The user likes TEA!", source_kind=kind)
    for pool in pools:
        want = gate.resolve(c, pool, policy, now)
        assert gate.resolve(c, pool, policy, now, statement=statement_key(c.statement)) == want


def test_stored_polarity_is_polarity() -> None:
    from app.memory.normalize import polarity, stored_polarity

    for s in ("The user likes tea", "The user does not like tea", "我不喜欢咖啡", "不错的主意"):
        assert stored_polarity(s) == polarity(s)
        assert stored_polarity(s) == polarity(s)  # from the cache


def test_identifier_screening_remembers_clean_ids_only() -> None:
    """A user id that holds a secret is refused every time it is sent; a clean one is
    checked once."""
    import pytest
    from pydantic_core import PydanticCustomError

    from app.api import screened

    secret = "sk-proj-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e"
    for _ in range(3):
        with pytest.raises(PydanticCustomError):
            screened.refuse_secret_identifier(secret)
        assert screened.refuse_secret_identifier("user-42") == "user-42"
    assert secret not in screened._clean_ids
    assert "user-42" in screened._clean_ids
