"""Following a run's transcript over Server-Sent Events, resuming after dropped connections."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Generator, Iterator
from dataclasses import dataclass
from types import TracebackType

import httpx
from pydantic import ValidationError

from ._base_client import AsyncAPIClient, RequestOptions, SyncAPIClient, retry_delay
from ._exceptions import APIConnectionError, APIResponseValidationError
from ._types import NotGiven, TimeoutTypes
from .types import TERMINAL_STATES, RunEvent

__all__ = ["ServerSentEvent", "SSEDecoder", "EventStream", "AsyncEventStream"]


@dataclass(frozen=True)
class ServerSentEvent:
    data: str
    id: str | None = None
    event: str | None = None
    retry: int | None = None


class SSEDecoder:
    """Line-by-line decoder following the WHATWG event-stream rules (comments, multi-line data, ids)."""

    def __init__(self) -> None:
        self._data: list[str] = []
        self._event: str | None = None
        self._id: str | None = None
        self._retry: int | None = None

    def decode(self, line: str) -> ServerSentEvent | None:
        """Feeds one line (without its end); returns a message when a blank line completes one."""
        if line == "":
            if not self._data and self._event is None and self._id is None:
                return None
            message = ServerSentEvent(data="\n".join(self._data), id=self._id, event=self._event, retry=self._retry)
            self._data, self._event, self._id, self._retry = [], None, None, None
            return message
        if line.startswith(":"):
            return None  # comment: the server's keep-alive
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self._id = value
        elif name == "retry" and value.isdigit():
            self._retry = int(value)
        return None


def _is_terminal_state(event: RunEvent) -> bool:
    return event.type == "state" and event.data.get("state") in TERMINAL_STATES


def _parse_event(message: ServerSentEvent, response: httpx.Response) -> RunEvent:
    try:
        return RunEvent.model_validate_json(message.data)
    except ValidationError as err:
        raise APIResponseValidationError(response, message.data, f"Malformed event in the stream: {err}") from err


def _seq_of(message: ServerSentEvent, event: RunEvent) -> int:
    return int(message.id) if message.id is not None and message.id.isdigit() else event.seq


@dataclass
class _StreamSpec:
    path: str
    after: int | None
    until_terminal: bool
    headers: dict[str, str]
    timeout: TimeoutTypes | NotGiven
    max_retries: int | NotGiven

    def max_retries_or(self, default: int) -> int:
        return default if isinstance(self.max_retries, NotGiven) else self.max_retries

    def options(self, last_event_id: int | None, first: bool) -> RequestOptions:
        headers = {**self.headers, "Accept": "text/event-stream"}
        params: dict[str, object] = {}
        if first and self.after is not None:
            params["after"] = self.after
        elif last_event_id is not None:
            # What a browser's EventSource sends on reconnect: the server resumes right after it.
            headers["Last-Event-ID"] = str(last_event_id)
        return RequestOptions(
            method="GET",
            path=self.path,
            params=params,
            headers=headers,
            timeout=self.timeout,
            max_retries=self.max_retries,
        )


class EventStream:
    """Iterates over a run's events in order, each exactly once, reconnecting with Last-Event-ID.

    With ``until_terminal`` (the default) iteration ends after the ``state`` event that made the run
    SUCCEEDED, FAILED, ERROR or CANCELLED, unless a later state change (a follow-up) already exists;
    without it the stream is followed until ``close()``. Use it as a context manager, or call
    ``close()``, when you stop iterating early.
    """

    last_event_id: int | None
    """The seq of the last event delivered (or the ``after`` it started from)."""

    def __init__(
        self,
        client: SyncAPIClient,
        spec: _StreamSpec,
        has_later_state: Callable[[int], bool],
        finished_after: Callable[[int], bool],
    ) -> None:
        self._client = client
        self._spec = spec
        self._has_later_state = has_later_state
        self._finished_after = finished_after
        self.last_event_id = spec.after
        self._iterator = self._iterate()

    def __iter__(self) -> Iterator[RunEvent]:
        return self

    def __next__(self) -> RunEvent:
        return next(self._iterator)

    def close(self) -> None:
        self._iterator.close()

    def __enter__(self) -> EventStream:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _iterate(self) -> Generator[RunEvent, None, None]:
        max_retries = self._spec.max_retries_or(self._client.max_retries)
        if self._spec.until_terminal and self._spec.after is not None and self._finished_after(self._spec.after):
            return  # the run finished at or before `after`: no terminal state would ever arrive
        drops = 0
        first = True
        while True:
            options = self._spec.options(self.last_event_id, first)
            first = False
            response, _ = self._client._send(options, stream=True)  # pyright: ignore[reportPrivateUsage]
            delivered = False
            try:
                decoder = SSEDecoder()
                for line in response.iter_lines():
                    message = decoder.decode(line)
                    if message is None or message.data == "":
                        continue
                    event = _parse_event(message, response)
                    self.last_event_id = _seq_of(message, event)
                    delivered = True
                    yield event
                    if self._spec.until_terminal and _is_terminal_state(event) and not self._has_later_state(event.seq):
                        return
            except httpx.TransportError:
                pass  # dropped (reset, read timeout): resume below
            finally:
                response.close()
            if delivered:
                drops = 0  # progress: reconnect at once
                continue
            drops += 1
            if drops > max_retries:
                raise APIConnectionError(
                    response.request, f"The event stream closed {drops} times in a row without delivering an event."
                )
            self._client._sleep(retry_delay(drops - 1, None))  # pyright: ignore[reportPrivateUsage]


class AsyncEventStream:
    """The async counterpart of :class:`EventStream` (``async for``, ``async with``, ``await close()``)."""

    last_event_id: int | None

    def __init__(
        self,
        client: AsyncAPIClient,
        spec: _StreamSpec,
        has_later_state: Callable[[int], Awaitable[bool]],
        finished_after: Callable[[int], Awaitable[bool]],
    ) -> None:
        self._client = client
        self._spec = spec
        self._has_later_state = has_later_state
        self._finished_after = finished_after
        self.last_event_id = spec.after
        self._iterator = self._iterate()

    def __aiter__(self) -> AsyncIterator[RunEvent]:
        return self

    async def __anext__(self) -> RunEvent:
        return await self._iterator.__anext__()

    async def close(self) -> None:
        await self._iterator.aclose()

    async def __aenter__(self) -> AsyncEventStream:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def _iterate(self) -> AsyncGenerator[RunEvent, None]:
        max_retries = self._spec.max_retries_or(self._client.max_retries)
        if self._spec.until_terminal and self._spec.after is not None and await self._finished_after(self._spec.after):
            return
        drops = 0
        first = True
        while True:
            options = self._spec.options(self.last_event_id, first)
            first = False
            response, _ = await self._client._send(options, stream=True)  # pyright: ignore[reportPrivateUsage]
            delivered = False
            try:
                decoder = SSEDecoder()
                async for line in response.aiter_lines():
                    message = decoder.decode(line)
                    if message is None or message.data == "":
                        continue
                    event = _parse_event(message, response)
                    self.last_event_id = _seq_of(message, event)
                    delivered = True
                    yield event
                    if (
                        self._spec.until_terminal
                        and _is_terminal_state(event)
                        and not await self._has_later_state(event.seq)
                    ):
                        return
            except httpx.TransportError:
                pass
            finally:
                await response.aclose()
            if delivered:
                drops = 0  # progress: reconnect at once
                continue
            drops += 1
            if drops > max_retries:
                raise APIConnectionError(
                    response.request, f"The event stream closed {drops} times in a row without delivering an event."
                )
            await self._client._sleep(retry_delay(drops - 1, None))  # pyright: ignore[reportPrivateUsage]
