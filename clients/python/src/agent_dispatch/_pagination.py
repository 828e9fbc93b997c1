"""Pages of ``GET /agent/runs`` that iterate over every run across pages (keyset cursors)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator
from typing import Any

from .types import ListRunsResponse, PageInfo, RunItem

__all__ = ["RunsPage", "AsyncRunsPage", "AsyncRunsPager"]


class RunsPage:
    """One page of runs. Iterating over it yields every run of this page and of the pages after it."""

    runs: list[RunItem]
    page_info: PageInfo

    def __init__(self, response: ListRunsResponse, fetch_page: Callable[[str], RunsPage]) -> None:
        self.runs = response.runs
        self.page_info = response.page_info
        self._fetch_page = fetch_page

    @property
    def next_cursor(self) -> str | None:
        return self.page_info.next_cursor if self.page_info.has_next_page else None

    def has_next_page(self) -> bool:
        return self.next_cursor is not None

    def get_next_page(self) -> RunsPage:
        cursor = self.next_cursor
        if cursor is None:
            raise RuntimeError("This is the last page; check has_next_page() first.")
        return self._fetch_page(cursor)

    def iter_pages(self) -> Iterator[RunsPage]:
        page = self
        while True:
            yield page
            if not page.has_next_page():
                return
            page = page.get_next_page()

    def __iter__(self) -> Iterator[RunItem]:
        for page in self.iter_pages():
            yield from page.runs

    def __repr__(self) -> str:
        return f"<RunsPage runs={len(self.runs)} has_next_page={self.has_next_page()}>"


class AsyncRunsPage:
    """The async counterpart of :class:`RunsPage` (``async for run in page``)."""

    runs: list[RunItem]
    page_info: PageInfo

    def __init__(self, response: ListRunsResponse, fetch_page: Callable[[str], Awaitable[AsyncRunsPage]]) -> None:
        self.runs = response.runs
        self.page_info = response.page_info
        self._fetch_page = fetch_page

    @property
    def next_cursor(self) -> str | None:
        return self.page_info.next_cursor if self.page_info.has_next_page else None

    def has_next_page(self) -> bool:
        return self.next_cursor is not None

    async def get_next_page(self) -> AsyncRunsPage:
        cursor = self.next_cursor
        if cursor is None:
            raise RuntimeError("This is the last page; check has_next_page() first.")
        return await self._fetch_page(cursor)

    async def iter_pages(self) -> AsyncIterator[AsyncRunsPage]:
        page = self
        while True:
            yield page
            if not page.has_next_page():
                return
            page = await page.get_next_page()

    async def __aiter__(self) -> AsyncIterator[RunItem]:
        async for page in self.iter_pages():
            for run in page.runs:
                yield run

    def __repr__(self) -> str:
        return f"<AsyncRunsPage runs={len(self.runs)} has_next_page={self.has_next_page()}>"


class AsyncRunsPager:
    """What ``AsyncDispatch.runs.list()`` returns: ``await`` it for the first page, or ``async for``
    over it for every run across pages."""

    def __init__(self, fetch_first: Callable[[], Awaitable[AsyncRunsPage]]) -> None:
        self._fetch_first = fetch_first

    def __await__(self) -> Generator[Any, None, AsyncRunsPage]:
        return self._fetch_first().__await__()

    async def __aiter__(self) -> AsyncIterator[RunItem]:
        page = await self._fetch_first()
        async for run in page:
            yield run
