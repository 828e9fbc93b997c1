"""Auto-paging over GET /agent/runs with page_info.next_cursor, against a live server."""

from __future__ import annotations

import pytest

from agent_dispatch import AsyncDispatch, Dispatch

from .support import DispatchServer, unique

pytestmark = pytest.mark.live

RUNS = 25
PAGE = 10


@pytest.fixture(scope="module")
def walk_set(server: DispatchServer) -> tuple[str, set[str]]:
    """25 runs sharing a config name no other test uses."""
    name = unique("pagewalk")
    with Dispatch(api_key=server.admin_key, base_url=server.base_url) as client:
        ids = {client.runs.create(prompt=f"page walk {i}", config={"name": name}).run_id for i in range(RUNS)}
    assert len(ids) == RUNS
    return name, ids


def test_iterating_a_list_walks_every_page(client: Dispatch, walk_set: tuple[str, set[str]]) -> None:
    name, ids = walk_set
    # created_at does not change while the runs execute, so the walk sees each exactly once.
    first = client.runs.list(name=name, limit=PAGE, sort_by="created_at")
    assert len(first.runs) == PAGE and first.has_next_page()

    seen: list[str] = [run.run_id for run in first]
    assert len(seen) == RUNS
    assert set(seen) == ids  # each exactly once: same size as a set of 25

    pages = [len(page.runs) for page in first.iter_pages()]
    assert pages == [10, 10, 5]
    last = list(first.iter_pages())[-1]
    assert not last.has_next_page() and last.next_cursor is None
    with pytest.raises(RuntimeError):
        last.get_next_page()


def test_list_order_and_explicit_cursor(client: Dispatch, walk_set: tuple[str, set[str]]) -> None:
    name, ids = walk_set
    first = client.runs.list(name=name, limit=PAGE, sort_by="created_at", sort_order="asc")
    assert first.next_cursor is not None
    second = client.runs.list(name=name, limit=PAGE, sort_by="created_at", sort_order="asc", cursor=first.next_cursor)
    assert second.runs[0].run_id == first.get_next_page().runs[0].run_id
    ordered = [run.created_at for run in first]
    assert ordered == sorted(ordered) and len(ordered) == len(ids)


def test_list_filters_by_state(client: Dispatch, walk_set: tuple[str, set[str]]) -> None:
    name, _ = walk_set
    for run in client.runs.list(name=name, state=["QUEUED", "INPROGRESS", "SUCCEEDED", "FAILED"], limit=PAGE):
        assert run.state in ("QUEUED", "INPROGRESS", "SUCCEEDED", "FAILED")
    assert list(client.runs.list(name=name, state="CANCELLED")) == []


@pytest.mark.anyio
async def test_async_iteration_walks_every_page(async_client: AsyncDispatch, walk_set: tuple[str, set[str]]) -> None:
    name, ids = walk_set
    seen = [run.run_id async for run in async_client.runs.list(name=name, limit=PAGE, sort_by="created_at")]
    assert len(seen) == RUNS and set(seen) == ids

    first = await async_client.runs.list(name=name, limit=PAGE, sort_by="created_at")
    pages = [len(page.runs) async for page in first.iter_pages()]
    assert pages == [10, 10, 5]
    assert len([run async for run in first]) == RUNS
