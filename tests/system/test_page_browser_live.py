"""The Calls tab's live updates in a real browser (headless Chromium, as `test_page_browser.py` drives it): Pause holds
the page still while calls arrive and Resume brings them in; when updates fail the header says since when and why
(the gateway gone; the sign-in ended). Skipped without Chromium."""

import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import anyio.to_thread
import pytest

from tests.harness import http_client, http_gateway, kitchen, write_config
from tests.system.browser import Browser

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("chromium") is None, reason="no chromium (scripts/services installs it)"),
]

TOKEN = "dana-token-0123456789"

WATCH = """
window.pageFetches = 0;
const fetching = window.fetch.bind(window);
window.fetch = (...args) => { window.pageFetches++; return fetching(...args); };
window.callEvents = 0;
const Source = window.EventSource;
window.EventSource = function (url) {  // the page's own stream, with a listener of ours on it
    const source = new Source(url);
    source.addEventListener("calls", () => setTimeout(() => {  // after the page's own listener
        window.callEvents++;
        document.body.dataset.callEvents = window.callEvents;  // a DOM change: `until` re-checks (paused, the page
    }));                                                        // itself changes nothing)
    return source;
};
"""
"""Run before page.js in every document: counts the page's fetches, and the `calls` events its stream got (counted
once every listener of the event has run, the page's included, and marked on the body so that a condition on the
count is re-checked: a paused page changes no DOM of its own, and `until` waited out its 60 s when the event came
after its first check)."""


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    running = Browser(tmp_path / "profile")
    running.send("Page.addScriptToEvaluateOnNewDocument", {"source": WATCH}, session=True)
    try:
        yield running
    finally:
        running.close()


def config(folder: Path, **sections: object) -> Path:
    return write_config(folder, {"k": kitchen("k")}, think={"state_dir": str(folder / "think")}, **sections)


@pytest.fixture
async def base(tmp_path: Path) -> AsyncIterator[str]:
    """A gateway for a test whose page stays open to its end. Asked for before `browser`, it stops once the browser
    has closed: a Calls tab still open holds the gateway's stop for its whole grace (3 s), and these tests are
    not about the gateway going away (the next one is)."""
    async with http_gateway(config(tmp_path)) as url:
        yield url


@pytest.fixture
async def signed(tmp_path: Path) -> AsyncIterator[str]:
    """`base`, wanting dana's token."""
    async with http_gateway(config(tmp_path, auth={"tokens": [{"name": "dana", "token": TOKEN}]})) as url:
        yield url


def until(browser: Browser, condition: str) -> None:
    """Resolves once `condition` (JS) holds in the page, re-checked whenever the page's DOM changes."""
    browser.evaluate(f"""new Promise(done => {{
        const holds = () => {condition};
        if (holds()) return done(true);
        new MutationObserver(() => holds() && done(true)).observe(document.body,
            {{childList: true, subtree: true, characterData: true, attributes: true}});
    }})""")


STATUS = "document.getElementById('live-status')"
ROWS = "document.querySelector('#calls tbody').innerText"


async def test_pause_holds_the_calls_still_as_calls_arrive_and_resume_brings_them_in(
    base: str, browser: Browser
) -> None:
    async with http_client(base) as client:
        await client.call_tool("k.echo", {"text": "first"})
        await anyio.to_thread.run_sync(browser.open, base + "/ui/calls", 1280)
        await anyio.to_thread.run_sync(until, browser, "document.getElementById('live').dataset.stream === 'open'")

        def pause() -> int:
            browser.evaluate("document.getElementById('pause').click()")
            pressed = browser.evaluate("document.getElementById('pause').getAttribute('aria-pressed')")
            assert pressed == "true" and browser.evaluate("document.getElementById('pause').textContent") == "Resume"
            assert browser.evaluate(f"{STATUS}.textContent").startswith("Paused; updated ")
            fetches: int = browser.evaluate("window.pageFetches")
            return fetches

        fetches = await anyio.to_thread.run_sync(pause)
        await client.call_tool("k.measure", {"text": "while paused"})
        with anyio.fail_after(30):  # the stream told the page of the call; paused, it fetched nothing
            await anyio.to_thread.run_sync(until, browser, "window.callEvents >= 1")
        assert await anyio.to_thread.run_sync(browser.evaluate, "window.pageFetches") == fetches
        assert "k.measure" not in await anyio.to_thread.run_sync(browser.evaluate, ROWS)

        def resume() -> None:
            browser.evaluate("document.getElementById('pause').click()")
            assert browser.evaluate("document.getElementById('pause').textContent") == "Pause"
            until(browser, f"{ROWS}.includes('k.measure') && {STATUS}.textContent.startsWith('Updated ')")
            assert browser.evaluate("document.getElementById('announce').textContent") == "1 new call"

        with anyio.fail_after(30):
            await anyio.to_thread.run_sync(resume)
        assert browser.problems == []


async def test_the_page_says_since_when_it_is_not_updating_when_the_gateway_is_gone(
    tmp_path: Path, browser: Browser
) -> None:
    async with http_gateway(config(tmp_path)) as base:
        await anyio.to_thread.run_sync(browser.open, base + "/ui/calls", 1280)
        assert (await anyio.to_thread.run_sync(browser.evaluate, f"{STATUS}.textContent")).startswith("Updated ")
    # The gateway stopped: updates fail (one may still get its 503 as it stops), and the header says so, stale.
    gone = f"{STATUS}.textContent.endsWith(': the gateway is not answering')"
    with anyio.fail_after(30):
        await anyio.to_thread.run_sync(until, browser, gone)
    said = await anyio.to_thread.run_sync(browser.evaluate, f"[{STATUS}.textContent, {STATUS}.className]")
    assert said[0].startswith("Not updating since ") and "stale" in said[1]


async def test_the_page_says_it_is_not_updating_once_its_sign_in_has_ended(signed: str, browser: Browser) -> None:
    def signed_out_elsewhere() -> None:
        browser.open(signed + "/ui/login", 1280)
        fill = f"document.querySelector('input[name=token]').value = '{TOKEN}'"
        browser.navigate_by(f"{fill}; document.getElementById('login').submit()")
        browser.open(signed + "/ui/calls", 1280)
        # Sign out as another tab of this browser would: the sign-in ends in the store, the cookie goes.
        ended = "fetch('/ui/logout', {method: 'POST', credentials: 'same-origin'}).then(r => r.url)"
        assert browser.evaluate(ended).endswith("/ui/login")
        until(browser, f"{STATUS}.textContent.startsWith('Not updating since ')")
        assert browser.evaluate(f"{STATUS}.textContent").endswith(": signed out: sign in again")

    with anyio.fail_after(60):
        await anyio.to_thread.run_sync(signed_out_elsewhere)
