"""`lsp/core/pipes.py`'s `MessageReader`: pygls' own `run_async` reads through it exactly what
it reads through pygls' reader, whatever the bytes and however the editor splits its writes,
and each message reaches the loop in one hand-over."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, BinaryIO

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pygls.io_ import StdinAsyncReader, run_async

from cardrunner.lsp.core.pipes import MessageReader, Reader

Seen = list[tuple[str, object]]


class Recorder:
    """The two calls `run_async` makes of a protocol, recorded."""

    def __init__(self, seen: Seen) -> None:
        self.seen = seen

    def structure_message(self, data: dict[str, Any]) -> dict[str, Any]:
        return data

    def handle_message(self, message: object) -> None:
        self.seen.append(("message", message))


def read_all(chunks: list[bytes], make: Callable[[BinaryIO], Reader]) -> Seen:
    """What `run_async` handles when the editor writes `chunks` (each one `write`) and closes."""
    read_end, write_end = os.pipe()

    def editor() -> None:
        for chunk in chunks:
            os.write(write_end, chunk)
        os.close(write_end)

    async def serve() -> Seen:
        seen: Seen = []

        def failed(exc: Exception, _kind: object) -> None:
            seen.append(("error", type(exc).__name__))

        with os.fdopen(read_end, "rb") as stdin:
            async with asyncio.timeout(20):
                await run_async(
                    threading.Event(),
                    make(stdin),
                    Recorder(seen),  # type: ignore[arg-type]
                    error_handler=failed,
                )
        return seen

    writer = threading.Thread(target=editor)
    writer.start()
    try:
        return asyncio.run(serve())
    finally:
        writer.join(10)


def ours(stdin: BinaryIO) -> Reader:
    return MessageReader(stdin)


def pygls_reader(stdin: BinaryIO) -> Reader:
    return StdinAsyncReader(stdin, ThreadPoolExecutor(1))


def framed(message: object, headers: list[bytes], blank: bytes = b"\r\n") -> bytes:
    body = json.dumps(message, ensure_ascii=False).encode()
    return b"".join([*headers, b"Content-Length: %d\r\n" % len(body), blank, body])


messages = st.dictionaries(
    st.text(max_size=8),
    st.one_of(st.text(), st.integers(), st.none(), st.lists(st.text(max_size=4), max_size=3)),
    max_size=4,
)
headers = st.lists(
    st.sampled_from(
        [b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n", b"X-Other: 1\r\n"]
    ),
    max_size=2,
)
segments = st.one_of(
    st.builds(framed, messages, headers, st.sampled_from([b"\r\n", b"\n", b" \t\r\n"])),
    st.binary(max_size=40),  # whatever a broken or hostile client sends
    st.sampled_from([b"\r\n", b"Content-Length: 3\r\n", b"Content-Length: 0\r\n\r\n", b"\n"]),
)


@st.composite
def writes(draw: st.DrawFn) -> list[bytes]:
    """A stream of segments, cut into the editor's writes at drawn places."""
    data = b"".join(draw(st.lists(segments, max_size=8)))
    cuts = sorted(draw(st.sets(st.integers(0, len(data)), max_size=6)))
    bounds = [0, *cuts, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds) if b > a]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(writes())
def test_run_async_reads_through_it_what_it_reads_through_pygls_reader(
    chunks: list[bytes],
) -> None:
    assert read_all(chunks, ours) == read_all(chunks, pygls_reader)


def test_well_formed_messages_arrive_whole_and_in_order() -> None:
    sent = [{"id": n, "text": "é\r\n" * n} for n in range(20)]
    chunks = [framed(m, []) for m in sent]
    assert read_all(chunks, ours) == [("message", m) for m in sent]


def test_each_message_reaches_the_loop_in_one_wake_up() -> None:
    """Headers and body written apart (as some clients do) still wake the loop once a message,
    plus once for the end of input; pygls' own reader wakes it for every line and the body."""
    sent = [{"id": n} for n in range(5)]
    chunks: list[bytes] = []
    for message in sent:
        whole = framed(message, [b"Content-Type: application/vscode-jsonrpc\r\n"])
        cut = whole.index(b"\r\n\r\n") + 4
        chunks += [whole[:cut], whole[cut:]]

    def wake_ups(make: Callable[[BinaryIO], Reader]) -> int:
        woken = 0

        def counted(stdin: BinaryIO) -> Reader:
            loop = asyncio.get_running_loop()
            wake = loop.call_soon_threadsafe

            def counting(callback: Callable[..., object], *args: Any, **kw: Any) -> asyncio.Handle:
                nonlocal woken
                woken += 1
                return wake(callback, *args, **kw)

            loop.call_soon_threadsafe = counting  # type: ignore[method-assign,assignment]
            return make(stdin)

        assert read_all(chunks, counted) == [("message", m) for m in sent]
        return woken

    assert wake_ups(ours) == len(sent) + 1
    assert wake_ups(pygls_reader) == 4 * len(sent) + 1  # two header lines, the blank, the body


@pytest.mark.parametrize("length", [10**14, 10**20])  # MemoryError, OverflowError
def test_a_length_no_memory_holds_ends_the_input_instead_of_the_reader(length: int) -> None:
    """The body is asked for in one read; a hostile length must end the input (the server then
    ends as on end of input), not raise into pygls' read loop and fail it, as pygls' reader does."""
    assert read_all([b"Content-Length: %d\r\n\r\n{}" % length], ours) == []
