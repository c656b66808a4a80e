""" "Show my own arguments" in a real browser (headless Chromium, as `test_page_browser.py` drives it): alice turns it
on on the Calls tab; her next call's detail shows its arguments, a secret-looking key redacted at any depth; her call
from before has none kept; bob, an admin who sees every call, sees no arguments of hers. Skipped without Chromium."""

import re
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from tests.harness import http_client, http_gateway, kitchen, write_config
from tests.system.browser import Browser
from tests.system.test_page_browser import SHOTS

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("chromium") is None, reason="no chromium (scripts/services installs it)"),
]

TOKENS = {"alice": "alice-token-0123456789", "bob": "bob-token-0123456789"}
SECRET = "s3cret-key-value"


@pytest.fixture
async def base(tmp_path: Path) -> AsyncIterator[str]:
    tokens = [{"name": "alice", "token": TOKENS["alice"]}, {"name": "bob", "token": TOKENS["bob"], "groups": ["ops"]}]
    config = write_config(
        tmp_path,
        {"k": kitchen("k")},
        auth={"tokens": tokens, "admin_groups": ["ops"]},
        think={"state_dir": str(tmp_path / "think")},
    )
    async with http_gateway(config) as url:
        yield url


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    running = Browser(tmp_path / "profile")
    try:
        yield running
    finally:
        running.close()


async def measure(base: str, who: str, arguments: dict[str, Any]) -> None:
    """A call of alice's or bob's as their MCP client makes it (k.measure answers a length: no argument in it)."""
    async with http_client(base, headers={"authorization": f"Bearer {TOKENS[who]}"}) as client:
        assert not (await client.call_tool("k.measure", arguments)).is_error


def sign_in(base: str, browser: Browser, who: str) -> None:
    browser.open(base + "/ui/login", 1280)
    fill = f"document.querySelector('input[name=token]').value = '{TOKENS[who]}'"
    browser.navigate_by(f"{fill}; document.getElementById('login').submit()")
    assert f"{who} · " in browser.dom()


def refs(base: str, browser: Browser) -> list[str]:
    browser.open(base + "/ui/calls", 1280)
    return re.findall(r'<tr data-call="([^"]+)"', browser.dom())


def section(dom: str, name: str) -> str | None:
    found = re.search(rf'<section id="{name}">(.*?)</section>', dom, re.DOTALL)
    return None if found is None else found.group(1)


async def test_a_person_who_opts_in_sees_their_own_arguments_redacted_and_nobody_else_sees_them(
    base: str, browser: Browser
) -> None:
    await measure(base, "alice", {"text": "said-before-choosing"})
    await anyio.to_thread.run_sync(sign_in, base, browser, "alice")
    [before] = await anyio.to_thread.run_sync(refs, base, browser)

    def opt_in() -> None:
        assert browser.evaluate("document.getElementById('keep-arguments').textContent") == "Show my own arguments"
        browser.navigate_by("document.getElementById('keep-arguments').click()")
        assert browser.evaluate("location.pathname") == "/ui/calls"
        assert browser.evaluate("document.getElementById('keep-arguments').textContent") == "Stop keeping my arguments"

    await anyio.to_thread.run_sync(opt_in)
    nested = {"text": "alice-visible-words", "options": {"depth": {"Api-Key": SECRET}, "limit": 3}}
    await measure(base, "alice", nested)
    await measure(base, "bob", {"text": "bob-words"})  # bob never chose: nothing of his is kept

    def alice_looks() -> str:
        after = next(r for r in refs(base, browser) if r != before)
        browser.open(f"{base}/ui/calls/{after}", 1280)
        shown = section(browser.dom(), "arguments")
        assert shown is not None and "alice-visible-words" in shown and '"limit": 3' in shown
        assert '"Api-Key": "[redacted]"' in shown and SECRET not in browser.dom()
        SHOTS.mkdir(parents=True, exist_ok=True)
        browser.screenshot(SHOTS / "call-arguments-1280.png")
        browser.open(f"{base}/ui/calls/{before}", 1280)  # made before she chose: nothing was kept
        dom = browser.dom()
        assert section(dom, "arguments") is None and "said-before-choosing" not in dom
        assert "Arguments not kept" in browser.evaluate("document.getElementById('arguments-note').textContent")
        return after

    after = await anyio.to_thread.run_sync(alice_looks)

    def bob_looks() -> None:
        sign_in(base, browser, "bob")
        everyone = refs(base, browser)
        assert after in everyone and len(everyone) == 3  # an admin: every call listed, alice's too
        for ref in everyone:
            browser.open(f"{base}/ui/calls/{ref}", 1280)
            dom = browser.dom()
            assert section(dom, "arguments") is None  # alice's: not his to see; his own: he never chose
            assert ('id="arguments-note"' in dom) == (ref not in (before, after))  # nothing said of alice's
            assert "alice-visible-words" not in dom and "bob-words" not in dom and SECRET not in dom
        exported = browser.evaluate("fetch('/ui/calls.json', {credentials: 'same-origin'}).then(r => r.text())")
        assert "alice-visible-words" not in exported
        assert browser.problems == []

    await anyio.to_thread.run_sync(bob_looks)
