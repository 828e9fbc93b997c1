"""client.models: GET /agent/models against a server with two model aliases, ``fast`` the default."""

from __future__ import annotations

from typing import get_args

import pytest

from agent_dispatch import AsyncDispatch, AuthenticationError, BadRequestError, Dispatch, ListModelsResponse, ModelInfo
from agent_dispatch.types import ModelProvider

from .support import DispatchServer, random_key, require_route

pytestmark = pytest.mark.live


@pytest.fixture(autouse=True)
def _has_route(catalog_server: DispatchServer) -> None:
    require_route(catalog_server, "agent/models")


def check_models(listed: ListModelsResponse) -> None:
    assert isinstance(listed, ListModelsResponse)
    assert all(isinstance(m, ModelInfo) for m in listed.models)
    assert all(m.provider in get_args(ModelProvider) for m in listed.models)
    by_id = {m.id: m for m in listed.models}
    assert set(by_id) == {"fast", "local"}
    assert listed.default_model_id == "fast"
    fast, local = by_id["fast"], by_id["local"]
    assert fast.provider == "ANTHROPIC" and fast.vision_supported is True
    assert "claude-haiku-4-5" in fast.display_name
    assert fast.description  # an alias says what it stands for (or why it cannot be used)
    assert local.provider == "UNKNOWN" and local.vision_supported is False


def test_list_models(catalog_server: DispatchServer) -> None:
    with Dispatch(api_key=catalog_server.admin_key, base_url=catalog_server.base_url) as client:
        check_models(client.models.list())

        raw = client.with_raw_response.models.list()
        assert raw.status_code == 200 and raw.url.path == "/api/v1/agent/models"
        check_models(raw.parse())
        assert client.models.with_raw_response.list().parse().default_model_id == "fast"

        with pytest.raises(BadRequestError) as caught:  # an unknown query parameter is named, not ignored
            client.models.list(extra_query={"bogus": "1"})
        assert "bogus" in (caught.value.detail or "")


def test_read_key_may_list_models(catalog_server: DispatchServer) -> None:
    with Dispatch(api_key=catalog_server.create_key(role="read"), base_url=catalog_server.base_url) as client:
        check_models(client.models.list())


def test_default_server_lists_the_scripted_stand_in(client: Dispatch, server: DispatchServer) -> None:
    require_route(server, "agent/models")
    listed = client.models.list()
    assert listed.default_model_id in {m.id for m in listed.models}


@pytest.mark.anyio
async def test_list_models_async(catalog_server: DispatchServer) -> None:
    async with AsyncDispatch(api_key=catalog_server.admin_key, base_url=catalog_server.base_url) as client:
        check_models(await client.models.list())
        raw = await client.with_raw_response.models.list()
        assert raw.status_code == 200
        check_models(raw.parse())
        check_models((await client.models.with_raw_response.list()).parse())
    async with AsyncDispatch(api_key=random_key(), base_url=catalog_server.base_url) as stranger:
        with pytest.raises(AuthenticationError):
            await stranger.models.list()
