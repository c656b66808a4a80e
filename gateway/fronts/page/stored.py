"""A spilled output on the page: `/ui/outputs/{id}` shows a bounded preview of its text view, and
`/ui/outputs/{id}/download` streams the whole text in pages, as `gateway.read_output` pages it.

Read as the viewer's (`Identity.owner`), under the output store's one rule of ownership: another identity's id
is not found, exactly as an id never used, whoever asks (an admin too: the page adds no way around the store).
"""

from collections.abc import AsyncIterator
from typing import Any

from starlette.responses import StreamingResponse

from gateway.errors import GatewayError
from gateway.store.base import Outputs
from gateway.store.outputs import MAX_PAGE_BYTES

PREVIEW_BYTES = 4_000
"""Bytes of an output's text the page shows inline (the rest: the download)."""


async def preview(outputs: Outputs, owner: str, output_id: str) -> dict[str, Any]:
    """The output's first `PREVIEW_BYTES` and its size, or why it cannot be read (unknown, another's, expired, a bad
    id, the store down: the store's own message)."""
    try:
        page = await outputs.read(owner, output_id, 0, PREVIEW_BYTES)
    except GatewayError as exc:
        return {"id": output_id, "error": str(exc)}
    more = page.total_bytes - len(page.text.encode())
    return {"id": output_id, "error": None, "text": page.text, "total_bytes": page.total_bytes, "more_bytes": more}


def others(output_id: str, whose: str) -> dict[str, Any]:
    """Another identity's output, as an admin viewing their call sees it: whose it is, not a dead link."""
    why = (
        f"This output is {whose}'s. The store keeps each identity's outputs to itself, so only {whose} can read it "
        "(gateway.read_output in their session, or this page signed in as them)."
    )
    return {"id": output_id, "error": why, "whose": whose}


async def download(outputs: Outputs, owner: str, output_id: str) -> StreamingResponse | str:
    """The whole text view, page by page (memory bounded by a page), or why not (the store's message): the first
    page is read before answering, so a missing output is a 404 page, not a broken download."""
    try:
        first = await outputs.read(owner, output_id, 0, MAX_PAGE_BYTES)
    except GatewayError as exc:
        return str(exc)

    async def pages() -> AsyncIterator[bytes]:
        page = first
        while True:
            yield page.text.encode()
            if page.next_offset is None:
                return
            # Expired (or the store lost) midway: the download ends short, no Content-Length promised otherwise.
            try:
                page = await outputs.read(owner, output_id, page.next_offset, MAX_PAGE_BYTES)
            except GatewayError:
                return

    headers = {"Content-Disposition": f'attachment; filename="output-{output_id}.txt"'}
    return StreamingResponse(pages(), media_type="text/plain; charset=utf-8", headers=headers)
