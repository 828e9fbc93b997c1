"""Image attachments: sent with a create and a follow-up, listed with ``runs.list_handoff_attachments``
(sync and async) and downloaded from their signed links; a file that is not an image is refused with a
400 naming it."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import pytest

from agent_dispatch import (
    AsyncDispatch,
    AttachmentParam,
    BadRequestError,
    Dispatch,
    HandoffAttachment,
    ListAttachmentsResponse,
    NotFoundError,
)

from .support import REPO_ROOT

OPENAPI = REPO_ROOT / "openapi.json"

# Real 1×1 images: the server sniffs the bytes, so they must be genuine.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
GIF = base64.b64decode("R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7")


def image(file_name: str, raw: bytes, mime_type: str) -> AttachmentParam:
    return {"file_name": file_name, "mime_type": mime_type, "data": base64.b64encode(raw).decode()}


def download(attachment: HandoffAttachment) -> bytes:
    # The signed link needs no API key.
    response = httpx.get(attachment.download_url, timeout=20)
    assert response.status_code == 200
    return response.content


@pytest.mark.skipif(not OPENAPI.exists(), reason="openapi.json not found (tested outside its repository)")
def test_models_match_openapi() -> None:
    document: dict[str, Any] = json.loads(OPENAPI.read_text())
    listed = document["components"]["schemas"]["ListAttachmentsResponse"]
    item = listed["properties"]["attachments"]["items"]
    for model, schema in ((ListAttachmentsResponse, listed), (HandoffAttachment, item)):
        required = {name for name, info in model.model_fields.items() if info.is_required()}
        assert set(model.model_fields) == set(schema["properties"])
        assert required == set(schema.get("required", []))


@pytest.mark.live
def test_create_and_followup_attachments(client: Dispatch) -> None:
    created = client.runs.create(prompt="$ echo with a picture", attachments=[image("shot.png", PNG, "image/png")])
    client.runs.followup(created.run_id, message="and a diagram", attachments=[image("d.gif", GIF, "image/gif")])

    listed = client.runs.list_handoff_attachments(created.run_id)
    assert isinstance(listed, ListAttachmentsResponse)
    first, second = listed.attachments
    assert (first.filename, first.mime_type, first.size_bytes, first.followup_id) == (
        "shot.png",
        "image/png",
        len(PNG),
        None,
    )
    assert (second.filename, second.mime_type) == ("d.gif", "image/gif")
    assert second.followup_id is not None
    assert second.expires_at > second.created_at
    assert download(first) == PNG
    assert download(second) == GIF

    raw = client.with_raw_response.runs.list_handoff_attachments(created.run_id)
    assert raw.status_code == 200
    assert [a.attachment_id for a in raw.parse().attachments] == [first.attachment_id, second.attachment_id]


@pytest.mark.live
def test_a_run_without_attachments_lists_none(client: Dispatch) -> None:
    created = client.runs.create(prompt="$ echo nothing attached")
    assert client.runs.list_handoff_attachments(created.run_id).attachments == []


@pytest.mark.live
def test_not_an_image_is_refused_naming_the_file(client: Dispatch) -> None:
    with pytest.raises(BadRequestError) as refused:
        client.runs.create(
            prompt="$ echo never", attachments=[image("notes.png", b"plain text, not a picture", "image/png")]
        )
    assert refused.value.problem is not None
    assert "notes.png" in str(refused.value.problem.detail)


@pytest.mark.live
def test_unknown_run_is_not_found(client: Dispatch) -> None:
    with pytest.raises(NotFoundError):
        client.runs.list_handoff_attachments("no-such-run")


@pytest.mark.live
@pytest.mark.anyio
async def test_attachments_async(async_client: AsyncDispatch) -> None:
    created = await async_client.runs.create(
        prompt="$ echo async picture", attachments=[image("async.gif", GIF, "image/gif")]
    )
    await async_client.runs.followup(
        created.run_id, message="one more", attachments=[image("more.png", PNG, "image/png")]
    )
    listed = await async_client.runs.list_handoff_attachments(created.run_id)
    assert [(a.filename, a.followup_id is None) for a in listed.attachments] == [
        ("async.gif", True),
        ("more.png", False),
    ]
    assert download(listed.attachments[1]) == PNG
    raw = await async_client.with_raw_response.runs.list_handoff_attachments(created.run_id)
    assert raw.status_code == 200
