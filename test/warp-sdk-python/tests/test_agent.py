"""The agent resource's own methods through the official Warp Platform SDK: the catalogue (skills as agents,
environments, models), artifacts and run-by-external-reference. One test per method, sync and async."""

from __future__ import annotations

import warnings

import httpx
import pytest
from warp_platform_sdk import BadRequestError, NotFoundError

from .conftest import Warp, call
from .flows import delivered_patch, finished

pytestmark = pytest.mark.anyio


async def test_list(warp: Warp) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the SDK deprecates it for Factories
        agents = await call(warp.agent.list())
    assert "greeter" in [a.name for a in agents.agents]


async def test_list_environments(warp: Warp) -> None:
    environments = await call(warp.agent.list_environments())
    assert [e.config.name for e in environments.environments] == ["bare"]


async def test_list_models(warp: Warp) -> None:
    models = await call(warp.agent.list_models())
    assert models.default_model_id in [m.id for m in models.models]


async def test_get_artifact(warp: Warp) -> None:
    uid = await delivered_patch(warp)
    artifact = await call(warp.agent.get_artifact(uid))
    assert artifact.artifact_type == "FILE" and artifact.artifact_uid == uid
    assert "+RETRIES = 3" in httpx.get(artifact.data.download_url, timeout=20).text
    with pytest.raises(NotFoundError):
        await call(warp.agent.get_artifact("no-such-artifact"))


async def test_download_artifact(warp: Warp) -> None:
    uid = await delivered_patch(warp)
    response = await call(warp.agent.download_artifact(uid))
    assert b"+RETRIES = 3" in await call(response.read())


async def test_get_run_by_external_reference(warp: Warp) -> None:
    comment = "https://github.com/acme/app/issues/31#issuecomment-4242"
    # Dispatch's on_behalf_of (admin keys): a run as the GitHub surface starts one from a comment.
    created = await call(warp.agent.run(prompt="$ true", extra_body={"on_behalf_of": {"trigger_url": comment}}))
    run = await finished(warp, created.run_id)
    assert any(a.artifact_type == "EXTERNAL_REFERENCE" for a in run.artifacts or [])
    for url in (comment, "https://github.com/acme/app/issues/31"):
        assert (await call(warp.agent.get_run_by_external_reference(url=url))).run_id == created.run_id
    with pytest.raises(NotFoundError):
        await call(warp.agent.get_run_by_external_reference(url="https://github.com/acme/app/pull/9999"))
    with pytest.raises(BadRequestError):
        await call(warp.agent.get_run_by_external_reference(url="not a url"))
