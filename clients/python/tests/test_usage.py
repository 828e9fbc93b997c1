"""client.usage: GET /usage (a Dispatch extension) against the session's live server."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from agent_dispatch import AsyncDispatch, BadRequestError, Dispatch, UsageReport, UsageRow

from .support import DispatchServer, require_route

pytestmark = pytest.mark.live


@pytest.fixture(autouse=True)
def _has_route(server: DispatchServer) -> None:
    require_route(server, "usage")


def period() -> tuple[datetime, datetime]:
    """An hour either side of now: every run of these tests."""
    now = datetime.now(timezone.utc)
    return now - timedelta(hours=1), now + timedelta(hours=1)


def test_retrieve_groups_a_persons_runs(server: DispatchServer) -> None:
    # A key of its own: its principal's row holds exactly the runs made here, whatever other tests made.
    with Dispatch(api_key=server.create_key(role="member"), base_url=server.base_url) as client:
        runs = [client.runs.create(prompt=f"$ echo usage {i}") for i in range(2)]
        person = client.runs.retrieve(runs[0].run_id).creator
        assert person is not None

        start, end = period()
        report = client.usage.retrieve(from_=start, to=end, group_by=["person", "model"])
        assert isinstance(report, UsageReport)
        assert report.group_by == ["person", "model"]
        assert report.period.to > report.period.from_
        mine = [row for row in report.rows if row.person == person.uid]
        # Scripted runs call no model: one row, under no model, that cost nothing.
        assert len(mine) == 1 and isinstance(mine[0], UsageRow)
        assert (mine[0].model, mine[0].runs, mine[0].person_name) == (None, 2, person.display_name)
        assert (mine[0].input_tokens, mine[0].cost_usd, mine[0].unpriced_runs) == (0, 0, 0)
        assert report.totals.runs >= 2

        raw = client.with_raw_response.usage.retrieve(group_by=["person"])
        assert raw.status_code == 200 and raw.url.params["group_by"] == "person"


def test_csv_has_a_header_row(client: Dispatch) -> None:
    client.runs.create(prompt="$ echo csv")
    start, end = period()
    text = client.usage.csv(from_=start, to=end, group_by=["person"])
    lines = text.split("\r\n")
    header = "person,person_name,runs,input_tokens,output_tokens,cost_usd,known_cost_usd,unpriced_runs,from,to"
    assert lines[0] == header
    assert len(lines) >= 3 and lines[-1] == ""


def test_refusals(client: Dispatch) -> None:
    with pytest.raises(BadRequestError) as caught:
        client.usage.retrieve(from_="2026-03-02", to="2026-03-01")
    assert "give from before to" in (caught.value.detail or "")
    with pytest.raises(BadRequestError) as caught:
        client.usage.retrieve(group_by=["team"])
    assert 'unknown key "team"' in (caught.value.detail or "")
    with pytest.raises(TypeError):
        client.usage.retrieve(group_by="person")


@pytest.mark.anyio
async def test_async_retrieve(async_client: AsyncDispatch) -> None:
    report = await async_client.usage.retrieve(to=datetime.now(timezone.utc).date() + timedelta(days=1))
    # Without from: the first of to's month.
    assert report.group_by == [] and report.period.from_.day == 1
