"""client.agents: GET /agent (skills as agents with variants) against a server with skills ``deploy``
(in acme/web), ``review`` (a skills directory) and a SKILL.md whose frontmatter is broken."""

from __future__ import annotations

from datetime import datetime

import pytest

from agent_dispatch import AsyncDispatch, Dispatch, ListAgentsResponse
from agent_dispatch.types import SkillAgent, SkillVariant, SkillVariantEnvironment, SkillVariantSource

from .support import DispatchServer, require_route

pytestmark = pytest.mark.live

DEPLOY_SPEC = "acme/web:.agents/skills/deploy/SKILL.md"


@pytest.fixture(autouse=True)
def _has_route(catalog_server: DispatchServer) -> None:
    require_route(catalog_server, "agent")


def by_name(listed: ListAgentsResponse) -> dict[str, SkillAgent]:
    assert isinstance(listed, ListAgentsResponse)
    assert all(isinstance(a, SkillAgent) for a in listed.agents)
    assert all(isinstance(v, SkillVariant) for a in listed.agents for v in a.variants)
    return {a.name: a for a in listed.agents}


def check_catalogue(listed: ListAgentsResponse) -> SkillVariant:
    agents = by_name(listed)
    assert set(agents) == {"deploy", "review"}  # the broken SKILL.md only on request
    (deploy,) = agents["deploy"].variants
    assert deploy.id == DEPLOY_SPEC
    assert deploy.description == "Deploys the web app"
    assert deploy.base_prompt == "Deploy it carefully."
    assert deploy.source == SkillVariantSource(owner="acme", name="web", skill_path=".agents/skills/deploy/SKILL.md")
    assert deploy.environments == [SkillVariantEnvironment(uid="web", name="web")]  # the one cloning acme/web
    assert deploy.error is None
    (review,) = agents["review"].variants
    assert review.id == "review" and review.base_prompt == "Review the diff."
    assert review.source.skill_path == "review/SKILL.md"
    assert {e.uid for e in review.environments} == {"web", "bare"}  # a skills-directory skill: everywhere
    return deploy


def test_list_agents(catalog_server: DispatchServer) -> None:
    with Dispatch(api_key=catalog_server.admin_key, base_url=catalog_server.base_url) as client:
        check_catalogue(client.agents.list())

        only_web = by_name(client.agents.list(repo="acme/web"))
        assert set(only_web) == {"deploy"}
        with_broken = by_name(client.agents.list(include_malformed_skills=True, refresh=True))
        (broken,) = with_broken["broken"].variants
        assert broken.error and broken.id == "acme/web:skills/broken/SKILL.md"

        # A run of the skill is its last run.
        client.runs.create(prompt="$ echo deploying", skill=DEPLOY_SPEC)
        deploy = check_catalogue(client.agents.list())
        assert isinstance(deploy.last_run_timestamp, datetime)
        assert [a.name for a in client.agents.list(sort_by="last_run").agents] == ["deploy", "review"]

        raw = client.with_raw_response.agents.list(include_malformed_skills=False)
        assert raw.status_code == 200 and raw.url.path == "/api/v1/agent"
        assert raw.url.params["include_malformed_skills"] == "false"  # booleans as the API spells them
        check_catalogue(raw.parse())
        check_catalogue(client.agents.with_raw_response.list().parse())


@pytest.mark.anyio
async def test_list_agents_async(catalog_server: DispatchServer) -> None:
    async with AsyncDispatch(api_key=catalog_server.admin_key, base_url=catalog_server.base_url) as client:
        check_catalogue(await client.agents.list(sort_by="name"))
        assert set(by_name(await client.agents.list(repo="acme/web", include_malformed_skills=True))) == {
            "deploy",
            "broken",
        }
        raw = await client.with_raw_response.agents.list()
        assert raw.status_code == 200
        check_catalogue(raw.parse())
        check_catalogue((await client.agents.with_raw_response.list()).parse())
