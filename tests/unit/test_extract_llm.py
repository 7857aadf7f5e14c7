"""The LLM extractor against a real HTTP fake of an OpenAI-compatible server (offline)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from app.memory.model import FactType, Origin, SourceKind
from app.providers.extract_llm import LLMExtractor
from app.providers.extractor import ExtractorError, Turn, build_extractor
from tests.fakes.openai_fake import OpenAIFake, Reply

TURNS = [
    Turn("user", "记住我对花生过敏。我们团队用 Go 1.22", "t1"),
    Turn("assistant", "好的，我记住了。你喜欢用表格吗？", "t2"),
    Turn("user", "I live in Berlin", "t3"),
]


def cand(
    turn_id: str, predicate: str, value: Any, evidence: str, conf: float = 0.8, **kw: Any
) -> dict[str, Any]:
    return {
        "type": kw.get("type", "semantic"),
        "predicate": predicate,
        "value": value,
        "statement": kw.get("statement", f"{predicate}: {value}"),
        "evidence": evidence,
        "confidence": conf,
        "turn_id": turn_id,
        "explicit": kw.get("explicit", False),
    }


@pytest.fixture
def fake() -> Iterator[OpenAIFake]:
    with OpenAIFake(api_key="sk-test") as server:
        yield server


_OPEN: list[LLMExtractor] = []


@pytest.fixture(autouse=True)
async def _close_extractors() -> AsyncIterator[None]:
    yield
    while _OPEN:
        await _OPEN.pop().aclose()


def extractor(fake: OpenAIFake, **kw: Any) -> LLMExtractor:
    defaults: dict[str, Any] = {
        "base_url": fake.base_url,
        "api_key": "sk-test",
        "model": "fake-model",
        "timeout_s": 2.0,
        "max_retries": 2,
        "backoff_base_s": 0.01,
        "backoff_cap_s": 0.05,
        "retry_after_cap_s": 0.5,
    }
    defaults.update(kw)
    ext = LLMExtractor(**defaults)
    _OPEN.append(ext)
    return ext


@pytest.mark.asyncio
async def test_good_json_becomes_candidates(fake: OpenAIFake) -> None:
    fake.chat_script.append(
        Reply.chat(
            {
                "candidates": [
                    cand("t1", "allergy", "花生", "记住我对花生过敏", 0.95, explicit=True),
                    cand("t1", "tech_stack", "Go 1.22", "我们团队用 Go 1.22", 0.8),
                    cand("t3", "location", "Berlin", "I live in Berlin", 0.75, type="profile"),
                ]
            }
        )
    )
    got = await extractor(fake).extract(
        TURNS, user_id="u1", scope="project:x", max_candidates_per_turn=3
    )
    assert [(c.turn_id, c.predicate, c.value, c.type, c.source_kind) for c in got] == [
        ("t1", "allergy", "花生", FactType.SEMANTIC, SourceKind.EXPLICIT_INSTRUCTION),
        ("t1", "tech_stack", "Go 1.22", FactType.SEMANTIC, SourceKind.USER_MESSAGE),
        ("t3", "location", "Berlin", FactType.PROFILE, SourceKind.USER_MESSAGE),
    ]
    assert all(c.origin is Origin.EXTRACTED and c.scope == "project:x" for c in got)
    assert got[0].evidence == "记住我对花生过敏"
    # the request: one chat call, JSON mode, model and key as configured, turns included
    (req,) = fake.chat_requests
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == "Bearer sk-test"
    assert req.json["model"] == "fake-model"
    assert req.json["response_format"] == {"type": "json_object"}
    assert "I live in Berlin" in req.json["messages"][1]["content"]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "reply",
    [
        pytest.param(Reply.chat("not json {"), id="content-not-json"),
        pytest.param(Reply.chat({"facts": []}), id="wrong-shape"),
        pytest.param(
            Reply.chat({"candidates": [cand("t1", "allergy", "花生", "我对花生过敏", 1.7)]}),
            id="confidence-out-of-range",
        ),
        pytest.param(
            Reply.chat({"candidates": [cand("t1", "Bad Predicate!", "x", "我对花生过敏")]}),
            id="bad-predicate",
        ),
        pytest.param(Reply.raw("<html>oops</html>"), id="envelope-not-json"),
    ],
)
async def test_malformed_output_raises_and_returns_nothing(fake: OpenAIFake, reply: Reply) -> None:
    fake.chat_script.append(reply)
    with pytest.raises(ExtractorError) as err:
        await extractor(fake).extract(TURNS, user_id="u1")
    assert err.value.retryable is True
    assert len(fake.chat_requests) == 1  # malformed output is not retried in place


@pytest.mark.asyncio
async def test_429_then_ok_is_retried(fake: OpenAIFake) -> None:
    fake.chat_script.extend(
        [
            Reply.error(429, retry_after=0.05),
            Reply.error(503),
            Reply.chat({"candidates": [cand("t3", "location", "Berlin", "I live in Berlin")]}),
        ]
    )
    started = time.monotonic()
    got = await extractor(fake).extract(TURNS, user_id="u1")
    assert [c.value for c in got] == ["Berlin"]
    assert len(fake.chat_requests) == 3
    assert time.monotonic() - started >= 0.05  # Retry-After was respected


@pytest.mark.asyncio
async def test_retry_after_is_capped(fake: OpenAIFake) -> None:
    fake.chat_script.extend([Reply.error(429, retry_after=3600), Reply.chat({"candidates": []})])
    started = time.monotonic()
    assert await extractor(fake, retry_after_cap_s=0.1).extract(TURNS, user_id="u1") == []
    assert time.monotonic() - started < 2


@pytest.mark.asyncio
async def test_429_forever_is_a_retryable_error(fake: OpenAIFake) -> None:
    fake.chat_script.extend([Reply.error(429, retry_after=0.01) for _ in range(10)])
    with pytest.raises(ExtractorError) as err:
        await extractor(fake, max_retries=2).extract(TURNS, user_id="u1")
    assert err.value.retryable is True
    assert len(fake.chat_requests) == 3


@pytest.mark.asyncio
async def test_timeout_is_a_retryable_error(fake: OpenAIFake) -> None:
    fake.chat_script.extend([Reply.chat({"candidates": []}, delay=1.0) for _ in range(2)])
    with pytest.raises(ExtractorError) as err:
        await extractor(fake, timeout_s=0.2, max_retries=1).extract(TURNS, user_id="u1")
    assert err.value.retryable is True
    assert "timeout" in str(err.value)


@pytest.mark.asyncio
async def test_client_errors_are_not_retried(fake: OpenAIFake) -> None:
    with pytest.raises(ExtractorError) as err:
        await extractor(fake, api_key="wrong").extract(TURNS, user_id="u1")
    assert err.value.retryable is False
    assert len(fake.chat_requests) == 1


@pytest.mark.asyncio
async def test_assistant_and_ungrounded_candidates_are_dropped(fake: OpenAIFake) -> None:
    fake.chat_script.append(
        Reply.chat(
            {
                "candidates": [
                    cand(
                        "t2", "preferred_output_format", "table", "你喜欢用表格吗", type="profile"
                    ),
                    cand("t9", "allergy", "虾", "我对虾过敏"),  # no such turn
                    cand("t3", "location", "Paris", "I live in Paris", type="profile"),  # not said
                    cand("t3", "location", "Berlin", "I live in Berlin", type="profile"),
                ]
            }
        )
    )
    got = await extractor(fake).extract(TURNS, user_id="u1")
    assert [(c.turn_id, c.value) for c in got] == [("t3", "Berlin")]


@pytest.mark.asyncio
async def test_max_candidates_per_turn_keeps_the_most_confident(fake: OpenAIFake) -> None:
    fake.chat_script.append(
        Reply.chat(
            {
                "candidates": [
                    cand("t1", "allergy", "花生", "我对花生过敏", 0.6),
                    cand("t1", "tech_stack", "Go 1.22", "Go 1.22", 0.9),
                    cand("t1", "tech_stack", "Go", "Go", 0.7),
                    cand("t3", "location", "Berlin", "I live in Berlin", 0.5),
                ]
            }
        )
    )
    got = await extractor(fake).extract(TURNS, user_id="u1", max_candidates_per_turn=1)
    assert [(c.turn_id, c.value) for c in got] == [("t1", "Go 1.22"), ("t3", "Berlin")]


@pytest.mark.asyncio
async def test_no_user_turn_means_no_call(fake: OpenAIFake) -> None:
    got = await extractor(fake).extract(
        [Turn("assistant", "I'm allergic to peanuts", "a")], user_id="u"
    )
    assert got == [] and fake.requests == []


@pytest.mark.asyncio
async def test_factory_builds_the_llm_extractor(fake: OpenAIFake) -> None:
    ext = build_extractor("llm", base_url=fake.base_url.removesuffix("/v1"), api_key="sk-test")
    assert ext.name == "llm"
    assert isinstance(ext, LLMExtractor)
    _OPEN.append(ext)
    assert await ext.extract(TURNS, user_id="u1") == []
    assert fake.chat_requests[0].path == "/v1/chat/completions"


def test_fake_embeddings_are_deterministic_and_batched() -> None:
    import httpx

    with OpenAIFake(dim=16) as fake:
        resp = httpx.post(f"{fake.base_url}/embeddings", json={"model": "m", "input": ["a", "b"]})
        body = resp.json()
        assert body["model"] == "m"
        assert [d["embedding"] for d in body["data"]] == [
            OpenAIFake.vector("a", 16),
            OpenAIFake.vector("b", 16),
        ]
        fake.embeddings_script.append(Reply.error(500))
        assert httpx.post(f"{fake.base_url}/embeddings", json={"input": "a"}).status_code == 500
        assert len(fake.embeddings_requests) == 2
