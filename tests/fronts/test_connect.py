"""People sign in to an OAuth-protected server through the gateway's HTTP front (`gateway.fronts.connect`): a call
that needs it answers with a link, the browser goes through `/connect/<server>` and the authorization server back to
`/oauth/callback`, and the next call on the same session carries that person's token; another person is asked to
sign in themselves and never gets it."""

import json
import re
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import mcp.types as types
import pytest
from cryptography.fernet import Fernet

from gateway.fronts.connect import BROWSER_COOKIE
from tests.harness import http_client, http_gateway, text_of, write_config
from tests.servers.guarded import serving
from tests.services import redis_server

pytestmark = pytest.mark.anyio
LINK = re.compile(r"Sign in to forge: (\S+/connect/forge\?ticket=\S+) — then call again")
TICKET = re.compile(r"ticket=[\w-]")


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serving(tmp_path_factory.mktemp("guarded")) as base:
        yield base


def two_people(guarded: str, tmp_path: Path) -> tuple[Path, dict[str, str], dict[str, str], dict[str, str]]:
    """A config with the guarded server `forge` behind an HTTP front that knows alice and bob by their static
    tokens; the token key; and each one's request headers."""
    tokens = [{"name": "alice", "token": "alice-secret-0123456789"}, {"name": "bob", "token": "bob-secret-0123456789"}]
    server = {"transport": "http", "url": f"{guarded}/mcp", "auth": {"type": "oauth"}}
    config = write_config(
        tmp_path, {"forge": server}, auth={"tokens": tokens}, think={"state_dir": str(tmp_path / "state")}
    )
    env = {"GATEWAY_TOKEN_KEY": Fernet.generate_key().decode()}
    alice, bob = ({"authorization": f"Bearer {who}-secret-0123456789"} for who in ("alice", "bob"))
    return config, env, alice, bob


def answer(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def test_a_person_signs_in_through_the_link_a_call_answers_with_and_calls_again_as_themselves(
    guarded: str, tmp_path: Path
) -> None:
    tokens = [{"name": "alice", "token": "alice-secret-0123456789"}, {"name": "bob", "token": "bob-secret-0123456789"}]
    server = {"transport": "http", "url": f"{guarded}/mcp", "auth": {"type": "oauth"}}
    config = write_config(
        tmp_path, {"forge": server}, auth={"tokens": tokens}, think={"state_dir": str(tmp_path / "state")}
    )
    env = {"GATEWAY_TOKEN_KEY": Fernet.generate_key().decode()}
    with anyio.fail_after(90):
        async with http_gateway(config, env=env) as base:
            alice = {"authorization": "Bearer alice-secret-0123456789"}
            async with http_client(base, headers=alice) as client:
                first = await client.call_tool("forge.whoami", {})
                assert first.is_error
                link = LINK.search(answer(first))
                assert link is not None and link.group(1).startswith(f"{base}/connect/forge?ticket="), answer(first)
                async with httpx2.AsyncClient() as browser:  # no Authorization: the ticket stands for alice
                    to_server = await browser.get(link.group(1))
                    assert to_server.status_code == 302
                    back = await browser.get(f"{to_server.headers['location']}&login_hint=alice")
                    assert back.headers["location"].startswith(f"{base}/oauth/callback?")
                    done = await browser.get(back.headers["location"])
                    assert done.status_code == 200 and "Signed in as alice" in done.text
                    again = await browser.get(link.group(1))  # a link is good once
                    assert again.status_code == 403
                second = await client.call_tool("forge.whoami", {})  # same session: no reconnect
                assert json.loads(text_of(second)) == {"user": "alice"}
            async with http_client(base, headers={"authorization": "Bearer bob-secret-0123456789"}) as client:
                bobs = await client.call_tool("forge.whoami", {})
                assert bobs.is_error and LINK.search(answer(bobs)) is not None
                assert "alice" not in answer(bobs)


async def test_a_sign_in_link_stands_for_its_person_alone_so_neither_the_log_nor_the_page_shows_its_ticket(
    guarded: str, tmp_path: Path
) -> None:
    tokens = [
        {"name": "alice", "token": "alice-secret-0123456789", "groups": ["ops"]},
        {"name": "bob", "token": "bob-secret-0123456789"},
    ]
    server = {"transport": "http", "url": f"{guarded}/mcp", "auth": {"type": "oauth"}}
    config = write_config(
        tmp_path,
        {"forge": server},
        auth={"tokens": tokens, "admin_groups": ["ops"]},
        think={"state_dir": str(tmp_path / "state")},
    )
    log = tmp_path / "gateway.log"
    env = {"GATEWAY_TOKEN_KEY": Fernet.generate_key().decode()}
    with anyio.fail_after(90):
        async with http_gateway(config, env=env, log=log) as base:
            async with http_client(base, headers={"authorization": "Bearer bob-secret-0123456789"}) as client:
                await client.list_tools()  # starting bob's connection for the listing is refused: logged
                asked = await client.call_tool("forge.whoami", {})
            link = LINK.search(answer(asked))
            assert link is not None, answer(asked)
            admin = {"authorization": "Bearer alice-secret-0123456789"}
            async with httpx2.AsyncClient(base_url=base, headers=admin, timeout=30) as page:
                calls = (await page.get("/ui/calls")).text
                number = re.findall(r'<tr data-call="([0-9a-f]+-\d+)"', calls)[0]
                detail = (await page.get(f"/ui/calls/{number}")).text
    assert "forge.whoami" in calls and "Sign in to forge" in detail and "ticket=(withheld)" in detail
    assert not TICKET.search(calls) and not TICKET.search(detail)
    logged = log.read_text()
    assert "server forge: not started for bob" in logged and "ticket=(withheld)" in logged
    assert not TICKET.search(logged)


async def test_a_link_from_one_replica_opens_on_another_and_a_third_hop_takes_the_callback(
    guarded: str, tmp_path: Path
) -> None:
    tokens = [{"name": "alice", "token": "alice-secret-0123456789"}]
    server = {"transport": "http", "url": f"{guarded}/mcp", "auth": {"type": "oauth"}}
    env = {"GATEWAY_TOKEN_KEY": Fernet.generate_key().decode()}
    alice = {"authorization": "Bearer alice-secret-0123456789"}
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    with redis_server(tmp_path / "redis") as redis, anyio.fail_after(120):
        configs = [
            write_config(
                tmp_path / name,
                {"forge": server},
                auth={"tokens": tokens},
                store={"backend": "redis", "url": redis.url, "prefix": "replicas:"},
                think={"state_dir": str(tmp_path / name / "state")},
            )
            for name in ("a", "b")
        ]
        async with http_gateway(configs[0], env=env) as a, http_gateway(configs[1], env=env) as b:
            async with http_client(a, headers=alice) as client:
                first = await client.call_tool("forge.whoami", {})
                link = LINK.search(answer(first))
                assert link is not None and link.group(1).startswith(a), answer(first)
                async with httpx2.AsyncClient() as browser:
                    to_server = await browser.get(link.group(1).replace(a, b))  # the balancer sent it to b
                    assert to_server.status_code == 302, to_server.text
                    back = await browser.get(f"{to_server.headers['location']}&login_hint=alice")
                    callback = back.headers["location"]
                    assert callback.startswith(f"{b}/oauth/callback?")
                    browser.cookies.set(BROWSER_COOKIE, to_server.cookies[BROWSER_COOKIE])  # sent to either host
                    done = await browser.get(callback.replace(b, a))  # and the callback to a
                    assert done.status_code == 200 and "Signed in as alice" in done.text, done.text
                second = await client.call_tool("forge.whoami", {})  # same session on a: no reconnect
                assert json.loads(text_of(second)) == {"user": "alice"}


async def test_a_server_bob_never_signed_in_to_lists_its_tools_from_alices_connection_and_says_sign_in_needed(
    guarded: str, tmp_path: Path
) -> None:
    config, env, alice, bob = two_people(guarded, tmp_path)
    with anyio.fail_after(120):
        async with http_gateway(config, env=env) as base:
            async with http_client(base, headers=alice) as client:
                link = LINK.search(answer(await client.call_tool("forge.whoami", {})))
                assert link is not None
                async with httpx2.AsyncClient(follow_redirects=True) as browser:  # alice is approved at once
                    assert "Signed in as alice" in (await browser.get(link.group(1))).text
        async with http_gateway(config, env=env) as base:  # restarted: nobody's connection runs
            async with http_client(base, headers=bob) as client:
                listed = {t.name for t in (await client.list_tools()).tools}
                assert {"forge.whoami", "forge.vault"} <= listed, listed
                asked = await client.call_tool("forge.whoami", {})
                assert asked.is_error and LINK.search(answer(asked)) is not None and "alice" not in answer(asked)
                bobs = (await client.call_tool("gateway.status", {})).structured_content
                bob_finds = answer(await client.call_tool("gateway.find_tools", {"query": "whose token"}))
            async with http_client(base, headers=alice) as client:
                alices = (await client.call_tool("gateway.status", {})).structured_content
                alice_finds = answer(await client.call_tool("gateway.find_tools", {"query": "whose token"}))
            async with httpx2.AsyncClient(base_url=base, timeout=30) as http:
                bob_page = (await http.get("/ui", headers=bob)).text
                alice_page = (await http.get("/ui", headers=alice)).text
                connect = await http.get("/ui/connect/forge", headers=bob)  # the page's Connect: a link made for bob
                assert connect.status_code == 303
                assert connect.headers["location"].startswith(f"{base}/connect/forge?ticket=")
                started = await http.get(connect.headers["location"])  # no credentials: the ticket stands for bob
                assert started.status_code == 302 and "/authorize?" in started.headers["location"]
    assert 'sign-in needed · <a href="/ui/connect/forge">Connect</a>' in bob_page
    assert '<span class="sign-in">signed in · <form method="post" action="/ui/disconnect/forge"' in alice_page
    assert "sign-in needed" not in alice_page
    assert "forge.whoami" in bob_finds and "Sign-in needed (for you) on forge" in bob_finds, bob_finds
    assert "forge.whoami" in alice_finds and "Sign-in needed" not in alice_finds, alice_finds
    assert bobs is not None and alices is not None
    assert (bobs["servers"]["forge"]["state"], bobs["servers"]["forge"]["sign_in"]) == ("sign-in needed", "needed")
    assert alices["servers"]["forge"]["sign_in"] == "signed in" and alices["servers"]["forge"]["state"] == "up"


async def sign_in_through(link: str, user: str) -> None:
    """What `user`'s browser does with a sign-in link (the authorization server approves them at once)."""
    async with httpx2.AsyncClient() as browser:
        to_server = await browser.get(link)
        back = await browser.get(f"{to_server.headers['location']}&login_hint={user}")
        assert "Signed in as" in (await browser.get(back.headers["location"])).text


async def test_disconnect_on_the_page_signs_the_viewer_alone_out_and_stops_their_connection(
    guarded: str, tmp_path: Path
) -> None:
    config, env, alice, bob = two_people(guarded, tmp_path)
    with anyio.fail_after(120):
        async with http_gateway(config, env=env) as base, httpx2.AsyncClient(base_url=base, timeout=30) as http:
            async with http_client(base, headers=alice) as client:
                link = LINK.search(answer(await client.call_tool("forge.whoami", {})))
                assert link is not None
                await sign_in_through(link.group(1), "alice")
                assert json.loads(text_of(await client.call_tool("forge.whoami", {}))) == {"user": "alice"}
                status = (await client.call_tool("gateway.status", {})).structured_content
                assert status is not None and status["servers"]["forge"]["processes"] == 1
                forged = await http.post("/ui/disconnect/forge", headers={**alice, "Origin": "https://evil.example"})
                bobs = await http.post("/ui/disconnect/forge", headers={**bob, "Origin": base})  # his own: none
                unknown = await http.post("/ui/disconnect/nowhere", headers={**alice, "Origin": base})
                still = json.loads(text_of(await client.call_tool("forge.whoami", {})))
                done = await http.post("/ui/disconnect/forge", headers={**alice, "Origin": base})
                status = (await client.call_tool("gateway.status", {})).structured_content
                after = await client.call_tool("forge.whoami", {})  # the same session: asked to sign in again
                alice_page = (await http.get("/ui", headers=alice)).text
    assert forged.status_code == 403 and still == {"user": "alice"}  # another site's form changed nothing
    assert bobs.status_code == 303 and unknown.status_code == 404 and "signs nobody in" in unknown.text
    assert done.status_code == 303 and done.headers["location"] == "/ui"
    assert status is not None and status["servers"]["forge"]["processes"] == 0  # stopped before any call
    assert status["servers"]["forge"]["sign_in"] == "needed"
    assert after.is_error and LINK.search(answer(after)) is not None
    assert 'sign-in needed · <a href="/ui/connect/forge">Connect</a>' in alice_page and "Disconnect" not in alice_page
