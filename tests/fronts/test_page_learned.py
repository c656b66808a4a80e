"""The page's `/ui/learned` on a real `gateway serve --http`: what find_tools learned from a client's search and
call is shown, and only an administrator may forget it (DESIGN §14)."""

import shutil
from pathlib import Path

import httpx2
import pytest

from tests.harness import http_client, http_gateway, write_config

pytestmark = pytest.mark.anyio

ALICE = "alice-token-0123456789"  # an admin (group ops)
BOB = "bob-token-0123456789ab"  # a developer
TAUGHT = "what hour is it over in Lisbon"


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


async def test_a_learned_request_is_shown_and_only_an_admin_may_forget_it(tmp_path: Path) -> None:
    tokens = [{"name": "alice", "token": ALICE, "groups": ["ops"]}, {"name": "bob", "token": BOB, "groups": ["dev"]}]
    servers = {"time": {"transport": "stdio", "command": shutil.which("mcp-server-time") or "mcp-server-time"}}
    config = write_config(
        tmp_path,
        servers,
        auth={"tokens": tokens, "admin_groups": ["ops"]},
        think={"state_dir": str(tmp_path / "think")},
        exposure={"mode": "search"},
    )
    async with http_gateway(config) as url:
        async with http_client(url, headers=bearer(BOB)) as client:
            await client.call_tool("gateway.find_tools", {"query": TAUGHT})
            await client.call_tool("gateway.find_tools", {"query": "current time in a timezone"})
            await client.call_tool("time.get_current_time", {"timezone": "Europe/Lisbon"})
        async with httpx2.AsyncClient(timeout=30) as http:
            shown = await http.get(url + "/ui/learned", headers=bearer(BOB))
            assert shown.status_code == 200
            assert 'data-tool="time.get_current_time"' in shown.text and TAUGHT in shown.text
            assert "Forget</button>" not in shown.text  # bob is read-only
            form = {"tool": "time.get_current_time", "request": TAUGHT}
            refused = await http.post(url + "/ui/learned/forget", data=form, headers=bearer(BOB))
            assert refused.status_code == 403 and "auth.admin_groups" in refused.text
            assert TAUGHT in (await http.get(url + "/ui/learned", headers=bearer(ALICE))).text
            done = await http.post(url + "/ui/learned/forget", data=form, headers=bearer(ALICE))
            assert done.status_code == 303 and done.headers["location"] == "/ui/learned"
            after = (await http.get(url + "/ui/learned", headers=bearer(ALICE))).text
            assert TAUGHT not in after and "current time in a timezone" in after  # the other request stays
