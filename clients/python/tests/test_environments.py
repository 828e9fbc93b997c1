"""client.environments: GET /agent/environments against a server with environments ``web`` and ``bare``."""

from __future__ import annotations

from datetime import datetime

import pytest

from agent_dispatch import AsyncDispatch, CloudEnvironment, Dispatch, ListEnvironmentsResponse
from agent_dispatch.types import GitHubRepo

from .support import DispatchServer, require_route

pytestmark = pytest.mark.live


@pytest.fixture(autouse=True)
def _has_route(catalog_server: DispatchServer) -> None:
    require_route(catalog_server, "agent/environments")


def by_uid(listed: ListEnvironmentsResponse) -> dict[str, CloudEnvironment]:
    assert isinstance(listed, ListEnvironmentsResponse)
    assert all(isinstance(e, CloudEnvironment) for e in listed.environments)
    return {e.uid: e for e in listed.environments}


def check_web(web: CloudEnvironment) -> None:
    assert web.config.name == "web"
    assert web.config.description == "The web app"
    assert web.config.github_repos == [GitHubRepo(owner="acme", repo="web")]
    assert web.config.setup_commands == ["npm ci"]
    assert isinstance(web.last_updated, datetime) and web.last_updated.tzinfo is not None
    assert web.setup_failed is False


def test_list_environments(catalog_server: DispatchServer) -> None:
    with Dispatch(api_key=catalog_server.admin_key, base_url=catalog_server.base_url) as client:
        environments = by_uid(client.environments.list())
        assert set(environments) == {"web", "bare"}
        check_web(environments["web"])
        bare = environments["bare"].config
        assert bare.description is None and bare.github_repos == [] and bare.setup_commands == []

        assert [e.uid for e in client.environments.list(sort_by="name").environments] == ["bare", "web"]

        # A run in an environment becomes its latest task.
        run = client.runs.create(prompt="$ echo in bare", config={"environment_id": "bare"})
        latest = by_uid(client.environments.list())["bare"].last_task_created
        assert latest is not None
        assert latest.id == run.run_id and latest.title == "$ echo in bare"
        assert isinstance(latest.created_at, datetime)

        raw = client.with_raw_response.environments.list()
        assert raw.status_code == 200 and raw.url.path == "/api/v1/agent/environments"
        check_web(by_uid(raw.parse())["web"])
        raw_sorted = client.environments.with_raw_response.list(sort_by="name")
        assert raw_sorted.url.params["sort_by"] == "name"


@pytest.mark.anyio
async def test_list_environments_async(catalog_server: DispatchServer) -> None:
    async with AsyncDispatch(api_key=catalog_server.admin_key, base_url=catalog_server.base_url) as client:
        environments = by_uid(await client.environments.list(sort_by="last_updated"))
        assert set(environments) == {"web", "bare"}
        check_web(environments["web"])
        raw = await client.with_raw_response.environments.list()
        assert raw.status_code == 200
        check_web(by_uid(raw.parse())["web"])
        check_web(by_uid((await client.environments.with_raw_response.list()).parse())["web"])
