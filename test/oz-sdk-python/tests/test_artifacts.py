"""agent.get_artifact through the official Oz Python SDK: a run delivers to a local bare repository
(delivery ``branch``, since no GitHub is configured) and its patch is a FILE artifact."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from oz_agent_sdk import AsyncOzAPI, NotFoundError, OzAPI
from oz_agent_sdk.types.agent_get_artifact_response import FileArtifactResponse

from .support import DispatchServer, wait_until


@pytest.fixture(scope="module")
def patch_uid(server: DispatchServer) -> Iterator[str]:
    with OzAPI(api_key=server.admin_key, base_url=server.base_url, max_retries=0) as oz:
        yield delivered_patch(oz)


def delivered_patch(oz: OzAPI) -> str:
    created = oz.agent.run(prompt="$ sed -i 's/RETRIES = 1/RETRIES = 3/' login.py", config={"repository": "acme/app"})

    def delivered() -> str | None:
        run = oz.agent.runs.retrieve(created.run_id)
        if run.state in ("FAILED", "ERROR", "CANCELLED"):
            pytest.fail(f"the delivered run ended {run.state}: {run.status_message}")
        if run.state != "SUCCEEDED":
            return None
        for artifact in run.artifacts or []:
            data = getattr(artifact, "data", None)
            uid = getattr(data, "artifact_uid", None) if data is not None else None
            if artifact.artifact_type == "FILE" and isinstance(uid, str):
                return uid
        pytest.fail(f"no FILE artifact on the delivered run: {run.artifacts}")

    return wait_until(delivered, timeout=60, what="the run to deliver its patch")


def test_get_artifact(client: OzAPI, patch_uid: str) -> None:
    artifact = client.agent.get_artifact(patch_uid)
    assert isinstance(artifact, FileArtifactResponse)
    assert artifact.artifact_uid == patch_uid
    assert artifact.data.filename.endswith(".patch")
    patch = httpx.get(artifact.data.download_url, timeout=20)
    assert patch.status_code == 200
    assert "+RETRIES = 3" in patch.text
    with pytest.raises(NotFoundError):
        client.agent.get_artifact("no-such-artifact")


@pytest.mark.anyio
async def test_async_get_artifact(async_client: AsyncOzAPI, patch_uid: str) -> None:
    artifact = await async_client.agent.get_artifact(patch_uid)
    assert artifact.artifact_type == "FILE"
