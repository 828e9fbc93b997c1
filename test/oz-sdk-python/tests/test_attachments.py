"""Image attachments through the official Oz Python SDK: agent.run with a PNG, runs.list_handoff_attachments
with a signed download link that serves the same bytes, a follow-up's attachment (the SDK's
submit_followup has no ``attachments`` parameter, so it rides in ``extra_body``) and a refused mime type,
sync and async, all strictly validated."""

from __future__ import annotations

import base64
import struct
import zlib

import httpx
import pytest
from oz_agent_sdk import AsyncOzAPI, BadRequestError, OzAPI
from oz_agent_sdk.types.agent import RunItem
from oz_agent_sdk.types.agent_run_params import Attachment

from .support import async_wait_until, unique, wait_until

TERMINAL = ("SUCCEEDED", "FAILED", "ERROR", "CANCELLED")


def png_1x1(rgb: tuple[int, int, int] = (255, 0, 0)) -> bytes:
    """A valid 1x1 truecolour PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # width, height, depth 8, RGB, no interlace
    pixels = zlib.compress(b"\x00" + bytes(rgb))  # filter type 0, then one pixel
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


def attachment(file_name: str, content: bytes, mime_type: str = "image/png") -> Attachment:
    return {"file_name": file_name, "mime_type": mime_type, "data": base64.b64encode(content).decode("ascii")}


def finished(client: OzAPI, run_id: str) -> RunItem:
    def check() -> RunItem | None:
        run = client.agent.runs.retrieve(run_id)
        return run if run.state in TERMINAL else None

    return wait_until(check, what=f"run {run_id} to finish")


def test_run_with_an_image_and_a_followup_image(client: OzAPI) -> None:
    red, blue = png_1x1((255, 0, 0)), png_1x1((0, 0, 255))
    first_name, second_name = f"{unique('shot')}.png", f"{unique('followup')}.png"
    created = client.agent.run(prompt="$ echo looked", attachments=[attachment(first_name, red)])
    assert finished(client, created.run_id).state == "SUCCEEDED"

    listed = client.agent.runs.list_handoff_attachments(created.run_id).attachments
    assert [(a.filename, a.mime_type) for a in listed] == [(first_name, "image/png")]
    assert listed[0].attachment_id
    assert getattr(listed[0], "followup_id", None) is None
    download = httpx.get(listed[0].download_url, timeout=20)  # signed: no API key
    assert download.status_code == 200
    assert download.headers["content-type"].startswith("image/png")
    assert download.content == red

    client.agent.runs.submit_followup(
        created.run_id, message="$ echo again", extra_body={"attachments": [attachment(second_name, blue)]}
    )
    wait_until(
        lambda: len(client.agent.runs.list_handoff_attachments(created.run_id).attachments) == 2,
        what="the follow-up's attachment",
    )
    assert finished(client, created.run_id).state in TERMINAL
    both = client.agent.runs.list_handoff_attachments(created.run_id).attachments
    by_name = {a.filename: a for a in both}
    assert set(by_name) == {first_name, second_name}
    assert by_name[second_name].mime_type == "image/png"
    assert getattr(by_name[second_name], "followup_id", None)
    assert httpx.get(by_name[second_name].download_url, timeout=20).content == blue
    assert httpx.get(by_name[first_name].download_url, timeout=20).content == red


def test_a_wrong_mime_type_is_a_bad_request(client: OzAPI) -> None:
    with pytest.raises(BadRequestError) as refused:
        client.agent.run(prompt="$ true", attachments=[attachment("notes.txt", b"hello", "text/plain")])
    assert "mime_type" in str(refused.value)
    created = client.agent.run(prompt="$ true")
    finished(client, created.run_id)
    with pytest.raises(BadRequestError):
        client.agent.runs.submit_followup(
            created.run_id,
            message="$ true",
            extra_body={"attachments": [attachment("doc.pdf", b"%PDF-1.4", "application/pdf")]},
        )
    assert client.agent.runs.list_handoff_attachments(created.run_id).attachments == []


@pytest.mark.anyio
async def test_async_attachments(async_client: AsyncOzAPI) -> None:
    runs = async_client.agent.runs
    green, white = png_1x1((0, 255, 0)), png_1x1((255, 255, 255))
    first_name, second_name = f"{unique('async')}.png", f"{unique('async-followup')}.png"
    created = await async_client.agent.run(prompt="$ echo async", attachments=[attachment(first_name, green)])

    async def done() -> RunItem | None:
        run = await runs.retrieve(created.run_id)
        return run if run.state in TERMINAL else None

    assert (await async_wait_until(done, what="the async run")).state == "SUCCEEDED"
    listed = (await runs.list_handoff_attachments(created.run_id)).attachments
    assert [(a.filename, a.mime_type) for a in listed] == [(first_name, "image/png")]
    async with httpx.AsyncClient(timeout=20) as http:
        assert (await http.get(listed[0].download_url)).content == green

        await runs.submit_followup(
            created.run_id, message="$ echo again", extra_body={"attachments": [attachment(second_name, white)]}
        )

        async def two() -> bool:
            return len((await runs.list_handoff_attachments(created.run_id)).attachments) == 2

        await async_wait_until(two, what="the async follow-up's attachment")
        by_name = {a.filename: a for a in (await runs.list_handoff_attachments(created.run_id)).attachments}
        assert by_name[second_name].mime_type == "image/png"
        assert (await http.get(by_name[second_name].download_url)).content == white

    with pytest.raises(BadRequestError):
        await async_client.agent.run(prompt="$ true", attachments=[attachment("a.png", green, "image/svg+xml")])
