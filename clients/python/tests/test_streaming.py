"""The SSE transcript stream: decoding, resuming with Last-Event-ID after a drop, and where it ends."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import cast

import httpx
import pytest

from agent_dispatch import APIConnectionError, AsyncDispatch, Dispatch, NotFoundError
from agent_dispatch._streaming import ServerSentEvent, SSEDecoder

from .support import RUN, DispatchServer, SleepRecorder, record_async_sleeps, record_sleeps

BASE = "http://dispatch.test/api/v1"


def decode_all(lines: list[str]) -> list[ServerSentEvent]:
    decoder = SSEDecoder()
    return [m for m in (decoder.decode(line) for line in lines) if m is not None]


def test_sse_decoder() -> None:
    messages = decode_all(
        [
            ": stream open",
            "",
            "id: 1",
            'data: {"a":',
            "data: 1}",
            "",
            "id:2",
            "event: x",
            "data:y",
            "retry: 500",
            "",
            "data: no end",
        ]
    )
    assert messages == [
        ServerSentEvent(data='{"a":\n1}', id="1"),
        ServerSentEvent(data="y", id="2", event="x", retry=500),
    ]  # the comment is skipped; the unterminated last message is not dispatched


def event(seq: int, type_: str = "log", **data: object) -> dict[str, object]:
    return {"seq": seq, "at": "2026-11-21T05:20:11.123Z", "type": type_, "data": data}


def sse(e: dict[str, object]) -> bytes:
    return f"id: {e['seq']}\ndata: {json.dumps(e)}\n\n".encode()


class Chunks(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A response body delivering chunks, then optionally failing as a dropped connection does."""

    def __init__(self, chunks: list[bytes], fail: bool) -> None:
        self.chunks = chunks
        self.fail = fail

    def __iter__(self) -> Iterator[bytes]:
        yield from self.chunks
        if self.fail:
            raise httpx.ReadError("connection reset by peer")

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk
        if self.fail:
            raise httpx.ReadError("connection reset by peer")


class FakeServer:
    """A run's transcript served as SSE and as JSON pages; the first stream is cut after ``cut_after``
    events. GET of the run answers the state of the transcript's last state event."""

    def __init__(self, events: list[dict[str, object]], cut_after: int | None) -> None:
        self.events = events
        self.cut_after = cut_after
        self.stream_requests: list[httpx.Request] = []
        self.page_requests: list[httpx.Request] = []
        self.run_requests: list[httpx.Request] = []

    def seq(self, e: dict[str, object]) -> int:
        return int(str(e["seq"]))

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if not request.url.path.endswith("/events"):
            self.run_requests.append(request)
            states = [cast(dict[str, str], e["data"])["state"] for e in self.events if e["type"] == "state"]
            return httpx.Response(200, json={**RUN, "state": states[-1] if states else "QUEUED"})
        after = int(request.headers.get("last-event-id") or request.url.params.get("after") or 0)
        remaining = [e for e in self.events if self.seq(e) > after]
        if request.headers.get("accept") != "text/event-stream":
            self.page_requests.append(request)
            return httpx.Response(
                200, json={"events": remaining, "next_after": self.seq(remaining[-1]) if remaining else after}
            )
        self.stream_requests.append(request)
        first = len(self.stream_requests) == 1
        if first and self.cut_after is not None:
            remaining = remaining[: self.cut_after]
        body = [b": stream open\n\n", *map(sse, remaining)]
        return httpx.Response(
            200,
            headers={"content-type": "text/event-stream"},
            stream=Chunks(body, fail=first and self.cut_after is not None),
        )


TRANSCRIPT = [
    event(1, "state", state="QUEUED"),
    event(2, "state", state="INPROGRESS"),
    event(3, "message", text="x"),
    event(4, "tool_result", output="hi\n"),
    event(5, "state", state="SUCCEEDED"),
]


def mock_client(fake: FakeServer, max_retries: int = 2) -> tuple[Dispatch, SleepRecorder]:
    client = Dispatch(
        api_key="dsp_t",
        base_url=BASE,
        max_retries=max_retries,
        http_client=httpx.Client(transport=httpx.MockTransport(fake)),
    )
    return client, record_sleeps(client)


def test_resumes_after_a_drop_with_last_event_id() -> None:
    fake = FakeServer(TRANSCRIPT, cut_after=3)
    client, sleeps = mock_client(fake)
    events = list(client.runs.events("r1"))
    assert [e.seq for e in events] == [1, 2, 3, 4, 5]  # nothing lost, nothing repeated
    first, second = fake.stream_requests
    assert "last-event-id" not in first.headers
    assert second.headers["last-event-id"] == "3"
    assert sleeps.delays == []  # the dropped stream had delivered events: reconnect at once
    # Stopped at SUCCEEDED after checking that no later state change exists.
    assert [r.url.params["after"] for r in fake.page_requests] == ["5"]


def test_after_starts_past_an_event() -> None:
    fake = FakeServer(TRANSCRIPT, cut_after=None)
    client, _ = mock_client(fake)
    assert [e.seq for e in client.runs.events("r1", after=3)] == [4, 5]
    assert fake.stream_requests[0].url.params["after"] == "3"


def test_after_the_final_state_ends_at_once() -> None:
    fake = FakeServer(TRANSCRIPT, cut_after=None)
    client, _ = mock_client(fake)
    assert list(client.runs.events("r1", after=5)) == []  # finished: nothing would ever arrive
    assert fake.stream_requests == [] and len(fake.run_requests) == 1


def test_does_not_stop_at_a_terminal_state_followed_by_a_follow_up() -> None:
    transcript = [
        *TRANSCRIPT,
        event(6, "followup", message="more"),
        event(7, "state", state="QUEUED"),
        event(8, "state", state="CANCELLED"),
    ]
    fake = FakeServer(transcript, cut_after=None)
    client, _ = mock_client(fake)
    assert [e.seq for e in client.runs.events("r1")] == [1, 2, 3, 4, 5, 6, 7, 8]
    assert [r.url.params["after"] for r in fake.page_requests] == ["5", "8"]


def test_until_terminal_false_keeps_following() -> None:
    fake = FakeServer(TRANSCRIPT, cut_after=None)
    client, _ = mock_client(fake, max_retries=1)
    seen: list[int] = []
    with client.runs.events("r1", until_terminal=False) as stream:
        for event in stream:
            seen.append(event.seq)
            if event.seq == 5:
                break
    assert seen == [1, 2, 3, 4, 5] and fake.page_requests == []


def test_gives_up_when_reconnects_deliver_nothing() -> None:
    fake = FakeServer([], cut_after=0)  # every connection closes without an event
    client, sleeps = mock_client(fake, max_retries=2)
    with pytest.raises(APIConnectionError):
        list(client.runs.events("r1"))
    assert len(fake.stream_requests) == 3 and len(sleeps.delays) == 2


@pytest.mark.anyio
async def test_async_resume_after_a_drop() -> None:
    fake = FakeServer(TRANSCRIPT, cut_after=2)
    client = AsyncDispatch(
        api_key="dsp_t", base_url=BASE, http_client=httpx.AsyncClient(transport=httpx.MockTransport(fake))
    )
    record_async_sleeps(client)
    async with client:
        events = [e async for e in client.runs.events("r1")]
    assert [e.seq for e in events] == [1, 2, 3, 4, 5]
    assert fake.stream_requests[1].headers["last-event-id"] == "2"


# --- live: the real server's stream, cut by the transport after three events ---


class CutFirstStream(httpx.BaseTransport):
    def __init__(self, cut_after: int) -> None:
        self.inner = httpx.HTTPTransport()
        self.cut_after = cut_after
        self.streams: list[httpx.Request] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        if request.headers.get("accept") != "text/event-stream":
            return response
        self.streams.append(request)
        if len(self.streams) > 1:
            return response
        assert isinstance(response.stream, httpx.SyncByteStream)
        return httpx.Response(
            response.status_code, headers=response.headers, stream=CutAfterEvents(response.stream, self.cut_after)
        )


class CutAfterEvents(httpx.SyncByteStream):
    def __init__(self, inner: httpx.SyncByteStream, events: int) -> None:
        self.inner = inner
        self.events = events

    def __iter__(self) -> Iterator[bytes]:
        buffer = b""
        sent = 0
        for chunk in self.inner:
            buffer += chunk
            while b"\n\n" in buffer:
                message, buffer = buffer.split(b"\n\n", 1)
                yield message + b"\n\n"
                sent += message.startswith(b"id:")
                if sent == self.events:
                    self.inner.close()
                    raise httpx.ReadError("cut by the test transport")

    def close(self) -> None:
        self.inner.close()


class AsyncCutFirstStream(httpx.AsyncBaseTransport):
    def __init__(self, cut_after: int) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.cut_after = cut_after
        self.streams: list[httpx.Request] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        if request.headers.get("accept") != "text/event-stream":
            return response
        self.streams.append(request)
        if len(self.streams) > 1:
            return response
        assert isinstance(response.stream, httpx.AsyncByteStream)
        return httpx.Response(
            response.status_code, headers=response.headers, stream=AsyncCutAfterEvents(response.stream, self.cut_after)
        )


class AsyncCutAfterEvents(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, events: int) -> None:
        self.inner = inner
        self.events = events

    async def __aiter__(self) -> AsyncIterator[bytes]:
        buffer = b""
        sent = 0
        async for chunk in self.inner:
            buffer += chunk
            while b"\n\n" in buffer:
                message, buffer = buffer.split(b"\n\n", 1)
                yield message + b"\n\n"
                sent += message.startswith(b"id:")
                if sent == self.events:
                    await self.inner.aclose()
                    raise httpx.ReadError("cut by the test transport")

    async def aclose(self) -> None:
        await self.inner.aclose()


@pytest.mark.live
def test_live_stream_resumes_after_a_cut(server: DispatchServer) -> None:
    transport = CutFirstStream(cut_after=3)
    with Dispatch(
        api_key=server.admin_key, base_url=server.base_url, timeout=20, http_client=httpx.Client(transport=transport)
    ) as client:
        created = client.runs.create(prompt="$ echo hi\n$ echo there")
        events = list(client.runs.events(created.run_id))
    seqs = [e.seq for e in events]
    assert seqs == list(range(1, len(seqs) + 1)) and len(seqs) > 3
    assert events[-1].type == "state" and events[-1].data["state"] == "SUCCEEDED"
    assert [str(e.data["output"]).strip() for e in events if e.type == "tool_result"] == ["hi", "there"]
    assert len(transport.streams) == 2 and transport.streams[1].headers["last-event-id"] == "3"


@pytest.mark.live
@pytest.mark.anyio
async def test_live_stream_resumes_after_a_cut_async(server: DispatchServer) -> None:
    transport = AsyncCutFirstStream(cut_after=2)
    async with AsyncDispatch(
        api_key=server.admin_key,
        base_url=server.base_url,
        timeout=20,
        http_client=httpx.AsyncClient(transport=transport),
    ) as client:
        created = await client.runs.create(prompt="$ echo hi")
        events = [e async for e in client.runs.events(created.run_id)]
    seqs = [e.seq for e in events]
    assert seqs == list(range(1, len(seqs) + 1)) and len(seqs) > 2
    assert transport.streams[1].headers["last-event-id"] == "2"


@pytest.mark.live
def test_events_of_unknown_run_raise_not_found(client: Dispatch) -> None:
    stream = client.runs.events("no-such-run")
    with pytest.raises(NotFoundError):
        next(stream)
