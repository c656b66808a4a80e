"""A spilled output on the page: the call opened links it and shows its preview, the whole comes as a download,
and each output is its caller's alone, as in the output store (another identity, an admin too, gets "not found")."""

import re

import httpx2
import pytest

from tests.fronts.test_page import ALICE, BOB, anyio_backend, base, bearer, get

pytestmark = pytest.mark.anyio
__all__ = ["anyio_backend", "base"]  # the fixtures of tests/fronts/test_page.py: one gateway for this module too


async def spilled_call(base: str) -> tuple[str, str]:
    """Alice's spilled k.blob call: its number and the output id the page links."""
    text = (await get(base, "/ui/calls")).text
    number = next(
        n for n, body in re.findall(r'<tr data-call="([0-9a-f]+-\d+)"[^>]*>(.*?)</tr>', text, re.S) if "k.blob" in body
    )
    page = (await get(base, f"/ui/calls/{number}")).text
    link = re.search(r'<a id="stored-link" href="/ui/outputs/([0-9a-f]{24})">', page)
    assert link is not None, page
    return number, link.group(1)


async def test_a_spilled_call_links_its_stored_output_and_shows_a_bounded_preview(base: str) -> None:
    number, output_id = await spilled_call(base)
    call = (await get(base, f"/ui/calls/{number}")).text
    shown = re.search(r'<pre id="stored-text">(.*?)</pre>', call, re.S)
    assert shown is not None and shown.group(1).startswith("x" * 100)
    assert len(shown.group(1)) < 5_000 and "46,000 more bytes in the download" in shown.group(1)  # 50,000 stored
    assert f'href="/ui/outputs/{output_id}/download"' in call
    page = await get(base, f"/ui/outputs/{output_id}")
    assert page.status_code == 200 and "50,000 bytes stored" in page.text


async def test_the_download_is_the_whole_output_text(base: str) -> None:
    _, output_id = await spilled_call(base)
    whole = await get(base, f"/ui/outputs/{output_id}/download")
    assert whole.status_code == 200 and whole.text == "x" * 50_000  # three pages of the store, joined
    assert whole.headers["content-disposition"] == f'attachment; filename="output-{output_id}.txt"'
    assert whole.headers["content-security-policy"].startswith("default-src 'none'")


async def test_another_identity_gets_not_found_for_an_output_as_from_the_store(base: str) -> None:
    _, output_id = await spilled_call(base)
    for path in (f"/ui/outputs/{output_id}", f"/ui/outputs/{output_id}/download"):
        refused = await get(base, path, token=BOB)
        assert refused.status_code == 404 and "xxxx" not in refused.text, path
        assert (await get(base, path, token=None)).status_code == 401, path
    unknown = await get(base, "/ui/outputs/" + "0" * 24 + "/download")
    assert unknown.status_code == 404 and "No stored output &#39;" + "0" * 24 in unknown.text
    bad = await get(base, "/ui/outputs/..secrets/download")
    assert bad.status_code == 404 and "is not an output id" in bad.text


async def test_an_output_link_followed_from_another_site_is_refused(base: str) -> None:
    _, output_id = await spilled_call(base)
    async with httpx2.AsyncClient(timeout=30) as http:
        answer = await http.get(
            f"{base}/ui/outputs/{output_id}/download", headers={**bearer(ALICE), "Origin": "https://evil.example"}
        )
    assert answer.status_code == 403
