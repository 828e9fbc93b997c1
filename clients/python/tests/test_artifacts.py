"""client.artifacts: the patch a delivered run leaves as a FILE artifact (get, download; sync and async).

The server delivers to a local bare repository (``GITHUB_SERVER_URL=file://…``, delivery ``branch``
since no GitHub is configured): a scripted run edits a file, Dispatch pushes a dispatch/ branch and
records ``changes.patch``.
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import httpx
import pytest

from agent_dispatch import AsyncDispatch, Dispatch, FileArtifactResponse, NotFoundError, RunItem

from .support import DispatchServer, start_server, wait_until

pytestmark = pytest.mark.live


def git(*args: str, cwd: Path | None = None) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def delivery_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DispatchServer]:
    """A server whose owner/repo remotes are bare repositories under a temporary directory."""
    root = tmp_path_factory.mktemp("remotes")
    seed = tmp_path_factory.mktemp("seed")
    git("init", "--quiet", "--bare", "--initial-branch=main", str(root / "acme" / "app.git"))
    git("init", "--quiet", "--initial-branch=main", str(seed))
    (seed / "login.py").write_text("RETRIES = 1\n")
    git("add", "--all", cwd=seed)
    git("-c", "user.name=Seed", "-c", "user.email=seed@example.com", "commit", "--quiet", "-m", "seed", cwd=seed)
    git("push", "--quiet", str(root / "acme" / "app.git"), "HEAD:refs/heads/main", cwd=seed)
    started = start_server(GITHUB_SERVER_URL=f"file://{root}", DISPATCH_ALLOW_FILE_REMOTES="true")
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture(scope="module")
def patch_uid(delivery_server: DispatchServer) -> str:
    with Dispatch(api_key=delivery_server.admin_key, base_url=delivery_server.base_url, timeout=20) as client:
        created = client.runs.create(
            prompt="$ sed -i 's/RETRIES = 1/RETRIES = 3/' login.py", config={"repository": "acme/app"}
        )

        def finished() -> RunItem | None:
            run = client.runs.retrieve(created.run_id)
            return run if run.state in ("SUCCEEDED", "FAILED", "ERROR") else None

        run = wait_until(finished, timeout=60, what="the delivered run to finish")
        assert run.state == "SUCCEEDED", run.status_message
        assert run.agent_config.repository == "acme/app" and run.agent_config.delivery == "branch"
        (patch,) = [a for a in run.artifacts if a.artifact_type == "FILE"]
        uid = patch.data["artifact_uid"]
        assert isinstance(uid, str)
        return uid


def check_patch(content: bytes) -> None:
    assert b"-RETRIES = 1\n+RETRIES = 3\n" in content
    with tempfile.TemporaryDirectory() as checkout:
        (Path(checkout) / "login.py").write_text("RETRIES = 1\n")
        subprocess.run(["git", "apply", "-"], cwd=checkout, input=content, check=True, capture_output=True)
        assert (Path(checkout) / "login.py").read_text() == "RETRIES = 3\n"


def check_artifact(artifact: FileArtifactResponse, uid: str) -> None:
    assert isinstance(artifact, FileArtifactResponse)
    assert artifact.artifact_uid == uid and artifact.artifact_type == "FILE"
    data = artifact.data
    assert data.filename == "changes.patch" and data.filepath == "changes.patch"
    assert data.content_type == "text/x-diff"
    assert data.description == "+1 −1 in 1 file"
    remaining = data.expires_at - datetime.now(timezone.utc)
    assert timedelta(minutes=14) < remaining <= timedelta(minutes=15, seconds=1)


def test_get_and_download(delivery_server: DispatchServer, patch_uid: str) -> None:
    with Dispatch(api_key=delivery_server.admin_key, base_url=delivery_server.base_url) as client:
        artifact = client.artifacts.get(patch_uid)
        check_artifact(artifact, patch_uid)
        assert client.artifacts.retrieve(patch_uid).artifact_uid == patch_uid

        content = client.artifacts.download(patch_uid)
        assert isinstance(content, bytes) and len(content) == artifact.data.size_bytes
        check_patch(content)

        raw = client.with_raw_response.artifacts.download(patch_uid)
        assert raw.status_code == 200 and raw.url.path.endswith(f"/{patch_uid}/content")
        assert raw.headers["content-disposition"] == 'attachment; filename="changes.patch"'
        assert raw.parse() == content

        # The signed link needs no API key.
        anonymous = httpx.get(artifact.data.download_url)
        assert anonymous.status_code == 200 and anonymous.content == content


def test_read_keys_read_and_other_teams_do_not(delivery_server: DispatchServer, patch_uid: str) -> None:
    reader = delivery_server.create_key(role="read")
    with Dispatch(api_key=reader, base_url=delivery_server.base_url) as client:
        check_artifact(client.artifacts.get(patch_uid), patch_uid)
        check_patch(client.artifacts.download(patch_uid))
    stranger = delivery_server.create_key(team="team_elsewhere")
    with Dispatch(api_key=stranger, base_url=delivery_server.base_url, max_retries=0) as client:
        with pytest.raises(NotFoundError):
            client.artifacts.get(patch_uid)
        with pytest.raises(NotFoundError):
            client.artifacts.download(patch_uid)
        with pytest.raises(ValueError):
            client.artifacts.get("")


@pytest.mark.anyio
async def test_get_and_download_async(delivery_server: DispatchServer, patch_uid: str) -> None:
    async with AsyncDispatch(api_key=delivery_server.admin_key, base_url=delivery_server.base_url) as client:
        artifact = await client.artifacts.get(patch_uid)
        check_artifact(artifact, patch_uid)
        content = await client.artifacts.download(patch_uid)
        assert len(content) == artifact.data.size_bytes
        check_patch(content)
        raw = await client.with_raw_response.artifacts.get(patch_uid)
        assert raw.status_code == 200
        check_artifact(raw.parse(), patch_uid)
        with pytest.raises(NotFoundError):
            await client.artifacts.get("no-such-artifact")
