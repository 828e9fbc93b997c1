"""client.identities: the team's service accounts (/agent/identities), admin keys only."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from agent_dispatch import (
    AgentIdentity,
    AsyncDispatch,
    BadRequestError,
    Dispatch,
    ListAgentIdentitiesResponse,
    NotFoundError,
    PermissionDeniedError,
)

from .support import DispatchServer, require_route, unique

live = pytest.mark.live

UNKNOWN_UID = "sa_0000000000000000"
SKILL = "acme/web:deploy"


@pytest.fixture
def has_route(server: DispatchServer) -> None:
    require_route(server, "agent/identities")


@live
@pytest.mark.usefixtures("has_route")
def test_identity_lifecycle(client: Dispatch) -> None:
    name = unique("bot")
    raw_created = client.with_raw_response.identities.create(
        name=name, description="Builds things", prompt="Be brief.", base_model="fast", skills=[SKILL]
    )
    assert raw_created.status_code == 201
    created = raw_created.parse()
    assert isinstance(created, AgentIdentity)
    assert created.uid and created.name == name and created.available is True
    assert created.description == "Builds things" and created.prompt == "Be brief."
    assert created.base_model == "fast" and created.skills == [SKILL] and created.secrets == []
    assert created.created_at.tzinfo is not None

    assert client.identities.retrieve(created.uid) == created
    listed = client.identities.list()
    assert isinstance(listed, ListAgentIdentitiesResponse)
    assert created.uid in {a.uid for a in listed.agents}

    # PUT changes what it names and leaves the rest; an empty string or list clears.
    renamed = client.identities.update(created.uid, name=f"{name}-2", description="Builds more")
    assert renamed.name == f"{name}-2" and renamed.description == "Builds more"
    assert renamed.prompt == "Be brief." and renamed.skills == [SKILL]
    cleared = client.identities.update(created.uid, description="", skills=[])
    assert cleared.description is None and cleared.skills == [] and cleared.name == f"{name}-2"
    assert client.identities.update(created.uid) == cleared  # nothing named: nothing changed
    assert client.identities.with_raw_response.update(created.uid, prompt="Be kind.").parse().prompt == "Be kind."

    assert client.identities.delete(created.uid) is None
    with pytest.raises(NotFoundError):
        client.identities.retrieve(created.uid)
    assert created.uid not in {a.uid for a in client.identities.list().agents}


@live
@pytest.mark.usefixtures("has_route")
def test_raw_responses(client: Dispatch) -> None:
    created = client.identities.create(name=unique("raw"))
    raw = client.identities.with_raw_response.retrieve(created.uid)
    assert raw.status_code == 200 and raw.url.path == f"/api/v1/agent/identities/{created.uid}"
    assert raw.parse().uid == created.uid
    assert client.with_raw_response.identities.list().parse().agents
    raw_deleted = client.with_raw_response.identities.delete(created.uid)
    assert raw_deleted.status_code == 204 and raw_deleted.content == b""
    assert raw_deleted.parse() is None


@live
@pytest.mark.usefixtures("has_route")
def test_unknown_identity_is_not_found(client: Dispatch) -> None:
    with pytest.raises(NotFoundError) as caught:
        client.identities.retrieve(UNKNOWN_UID)
    assert caught.value.error_code == "resource_not_found"
    assert caught.value.problem is not None
    assert caught.value.problem.instance == f"/api/v1/agent/identities/{UNKNOWN_UID}"
    with pytest.raises(NotFoundError):
        client.identities.update(UNKNOWN_UID, name="x")
    with pytest.raises(NotFoundError):
        client.identities.delete(UNKNOWN_UID)


@live
@pytest.mark.usefixtures("has_route")
def test_invalid_requests_are_bad_requests(client: Dispatch) -> None:
    with pytest.raises(BadRequestError) as caught:
        client.identities.create(name="")
    assert "name" in (caught.value.detail or "")
    with pytest.raises(BadRequestError):
        client.identities.delete("admin")  # the team's default identity stays


@live
@pytest.mark.usefixtures("has_route")
def test_member_and_read_keys_are_refused(
    client: Dispatch, server: DispatchServer, member_key: str, read_only_key: str
) -> None:
    created = client.identities.create(name=unique("kept"))
    for key in (member_key, read_only_key):
        with Dispatch(api_key=key, base_url=server.base_url) as other:
            with pytest.raises(PermissionDeniedError) as caught:
                other.identities.list()
            assert caught.value.error_code == "not_authorized"
            with pytest.raises(PermissionDeniedError):
                other.identities.create(name=unique("nope"))
            with pytest.raises(PermissionDeniedError):
                other.identities.retrieve(created.uid)
            with pytest.raises(PermissionDeniedError):
                other.identities.update(created.uid, name="taken")
            with pytest.raises(PermissionDeniedError):
                other.identities.delete(created.uid)
    assert client.identities.retrieve(created.uid) == created  # untouched
    client.identities.delete(created.uid)


@live
@pytest.mark.anyio
@pytest.mark.usefixtures("has_route")
async def test_identities_async(async_client: AsyncDispatch, server: DispatchServer, member_key: str) -> None:
    name = unique("abot")
    raw_created = await async_client.with_raw_response.identities.create(name=name, skills=[SKILL])
    assert raw_created.status_code == 201
    created = raw_created.parse()
    assert created.name == name and created.skills == [SKILL] and created.description is None

    assert await async_client.identities.retrieve(created.uid) == created
    assert created.uid in {a.uid for a in (await async_client.identities.list()).agents}
    updated = await async_client.identities.update(created.uid, description="async", base_model="local")
    assert updated.description == "async" and updated.base_model == "local" and updated.skills == [SKILL]
    raw = await async_client.identities.with_raw_response.retrieve(created.uid)
    assert raw.status_code == 200 and raw.parse() == updated
    assert (await async_client.with_raw_response.identities.list()).parse().agents

    async with AsyncDispatch(api_key=member_key, base_url=server.base_url) as member:
        with pytest.raises(PermissionDeniedError):
            await member.identities.list()
        with pytest.raises(PermissionDeniedError):
            await member.identities.create(name=unique("nope"))
        with pytest.raises(PermissionDeniedError):
            await member.identities.delete(created.uid)

    raw_deleted = await async_client.with_raw_response.identities.delete(created.uid)
    assert raw_deleted.status_code == 204 and raw_deleted.parse() is None
    with pytest.raises(NotFoundError):
        await async_client.identities.retrieve(created.uid)
    with pytest.raises(NotFoundError):
        await async_client.identities.update(UNKNOWN_UID, name="x")
    with pytest.raises(NotFoundError):
        await async_client.identities.delete(created.uid)


# --- mocked: what goes on the wire ---


def test_requests_on_the_wire() -> None:
    seen: list[httpx.Request] = []
    identity: dict[str, Any] = {
        "uid": "sa/1",
        "name": "n",
        "available": True,
        "created_at": "2026-11-21T05:20:11.123Z",
        "updated_at": "2026-11-21T05:20:11.123Z",
        "default_runner_uid": "",
        "memory": {"attached_stores": [], "auto_memory": {"enabled": False}},
        "skills": [],
        "secrets": [],
        "brand_new": 1,
    }

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.method == "DELETE":
            return httpx.Response(204)
        if request.method == "GET" and request.url.path.endswith("/identities"):
            return httpx.Response(200, json={"agents": [identity]})
        return httpx.Response(201 if request.method == "POST" else 200, json=identity)

    with Dispatch(
        api_key="k",
        base_url="http://dispatch.test/api/v1",
        http_client=httpx.Client(transport=httpx.MockTransport(handler)),
    ) as client:
        made = client.identities.create(name="n", skills=("a/b:c",), extra_body={"secrets": []})
        assert made.model_extra == {"brand_new": 1}  # unknown fields are kept
        client.identities.update("sa/1", description="", prompt=None)
        assert client.identities.list().agents[0].uid == "sa/1"
        assert client.identities.delete("sa/1") is None
        with pytest.raises(ValueError):
            client.identities.retrieve("")
        with pytest.raises(TypeError):
            client.identities.create(name="n", skills="a/b:c")
    create, update, list_, delete = seen
    assert create.method == "POST" and create.url.path == "/api/v1/agent/identities"
    assert json.loads(create.content) == {"name": "n", "skills": ["a/b:c"], "secrets": []}
    assert create.headers["idempotency-key"].startswith("dispatch-py-")
    assert update.method == "PUT" and update.url.raw_path == b"/api/v1/agent/identities/sa%2F1"
    assert json.loads(update.content) == {"description": ""}  # None: left out, so unchanged
    assert "idempotency-key" not in update.headers
    assert list_.method == "GET"
    assert delete.method == "DELETE" and delete.content == b""
    assert "content-type" not in delete.headers  # no body at all
