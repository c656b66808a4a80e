"""Disconnect on the Servers tab in a real browser (headless Chromium, as `test_page_browser.py` drives it): a person
signed in to a server that acts as each person sees "signed in · Disconnect"; the button's form (a same-origin POST,
passing the Origin check) signs them out, and the tab they land back on offers Connect. Skipped without Chromium."""

import shutil
from collections.abc import Iterator
from pathlib import Path

import anyio
import anyio.to_thread
import httpx2
import pytest
from cryptography.fernet import Fernet

from tests.harness import http_gateway, write_config
from tests.servers.guarded import serving
from tests.system.browser import Browser
from tests.system.test_page_browser import SHOTS

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("chromium") is None, reason="no chromium (scripts/services installs it)"),
]


@pytest.fixture
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serving(tmp_path_factory.mktemp("guarded")) as base:
        yield base


async def test_disconnect_in_the_browser_signs_the_person_out_and_the_tab_offers_connect(
    guarded: str, tmp_path: Path
) -> None:
    server = {"transport": "http", "url": f"{guarded}/mcp", "auth": {"type": "oauth"}}
    config = write_config(tmp_path, {"forge": server}, think={"state_dir": str(tmp_path / "state")})
    env = {"GATEWAY_TOKEN_KEY": Fernet.generate_key().decode()}
    seen: dict[str, str] = {}
    with anyio.fail_after(120):
        async with http_gateway(config, env=env) as base, httpx2.AsyncClient(base_url=base) as http:
            # Signed in through the page's own Connect (no auth here: the person on this machine).
            link = (await http.get("/ui/connect/forge")).headers["location"]
            to_server = await http.get(link)
            back = await http.get(f"{to_server.headers['location']}&login_hint=alice")
            assert "Signed in" in (await http.get(back.headers["location"])).text

            def look() -> None:
                SHOTS.mkdir(parents=True, exist_ok=True)
                browser = Browser(tmp_path / "profile")
                try:
                    browser.open(base + "/ui", 1000, 400)
                    seen["before"] = browser.evaluate("document.querySelector('#servers .sign-in').textContent")
                    browser.screenshot(SHOTS / "servers-disconnect.png")
                    browser.navigate_by("document.querySelector('form.disconnect button').click()")
                    seen["path"] = browser.evaluate("location.pathname")
                    seen["after"] = browser.evaluate("document.querySelector('#servers .sign-in').textContent")
                    seen["problems"] = "; ".join(browser.problems)
                finally:
                    browser.close()

            await anyio.to_thread.run_sync(look)
    assert seen["before"] == "signed in · Disconnect"
    assert (seen["path"], seen["after"], seen["problems"]) == ("/ui", "sign-in needed · Connect", "")
