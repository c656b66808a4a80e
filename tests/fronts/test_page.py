"""The page and /metrics on a real `gateway serve --http` with a real downstream, after real calls: what each tab
shows, the Prometheus text, and who may see and change what (auth, Origin, admins)."""

import base64
import re
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from tests.harness import free_port, http_client, http_gateway, kitchen, write_config

ALICE = "alice-token-0123456789"  # an admin (group ops)
BOB = "bob-token-0123456789ab"  # a developer whom the policy keeps from k.boom
pytestmark = pytest.mark.anyio
RULES = [{"name": "no-boom-for-devs", "groups": ["dev"], "deny": ["k.boom"]}]


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def config(tmp_path: Path) -> Path:
    tokens = [
        {"name": "alice", "token": ALICE, "groups": ["ops"]},
        {"name": "bob", "token": BOB, "groups": ["dev"]},
    ]
    return write_config(
        tmp_path,
        {"k": kitchen("k")},
        auth={"tokens": tokens, "admin_groups": ["ops"]},
        policy={"rules": RULES},
        limits={"max_inline_bytes": 2000, "outputs_dir": str(tmp_path / "outputs")},
        think={"state_dir": str(tmp_path / "think")},
        listen={"trusted_proxies": ["127.0.0.1"]},  # as behind a TLS proxy on this host
    )


@asynccontextmanager
async def after_calls(folder: Path) -> AsyncIterator[str]:
    """A gateway after: three echoes and a failing tool by alice, a spilled blob by alice, a refused call by bob."""
    async with http_gateway(config(folder)) as url:
        async with http_client(url, headers=bearer(ALICE)) as client:
            for i in range(3):
                await client.call_tool("k.echo", {"text": f"hello {i}"})
            await client.call_tool("k.boom", {})
            await client.call_tool("k.blob", {"n": 50_000})
        async with http_client(url, headers=bearer(BOB)) as client:
            refused = await client.call_tool("k.boom", {})
            assert refused.is_error
        yield url


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"  # module-scoped: `base` is


@pytest.fixture(scope="module")
async def base(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    """`after_calls`, one gateway for the module's tests that only look (a GET, a sign-in, a refused change)."""
    async with after_calls(tmp_path_factory.mktemp("page")) as url:
        yield url


@pytest.fixture(scope="module")
async def calling(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    """`after_calls`, one gateway for the module's tests that make calls of their own and then look only at the
    newest: none of them sees another's."""
    async with after_calls(tmp_path_factory.mktemp("calling")) as url:
        yield url


@pytest.fixture
async def own(tmp_path: Path) -> AsyncIterator[str]:
    """`after_calls` for a test that changes the gateway (a reload) or counts every call of an identity: its own."""
    async with after_calls(tmp_path) as url:
        yield url


async def get(base: str, path: str, token: str | None = ALICE, **headers: str) -> httpx2.Response:
    async with httpx2.AsyncClient(timeout=30) as http:
        return await http.get(base + path, headers={**(bearer(token) if token else {}), **headers})


def sample(text: str, name: str, **labels: str) -> float:
    """The value of the Prometheus sample `name` whose labels are exactly `labels`."""
    wanted = ",".join(f'{k}="{v}"' for k, v in labels.items())
    found = re.search(rf"^{re.escape(name)}{{{re.escape(wanted)}}} (\S+)$", text, re.MULTILINE)
    assert found is not None, f"no {name}{{{wanted}}} in:\n{text}"
    return float(found.group(1))


async def test_metrics_count_each_call_by_the_mcp_semantic_conventions(base: str) -> None:
    answer = await get(base, "/metrics")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain; version=0.0.4")
    assert answer.headers["x-content-type-options"] == "nosniff"  # never read as HTML, whatever a name says
    assert answer.headers["content-security-policy"] == "default-src 'none'; frame-ancestors 'none'; sandbox"
    text = answer.text
    server = "mcp_server_operation_duration_seconds"
    echo = {"mcp_method_name": "tools/call", "gen_ai_tool_name": "k.echo"}
    assert sample(text, f"{server}_count", **echo) == 3
    assert sample(text, f"{server}_bucket", **echo, le="+Inf") == 3
    assert 0 < sample(text, f"{server}_sum", **echo) < 30
    boom = {"mcp_method_name": "tools/call", "gen_ai_tool_name": "k.boom"}
    assert sample(text, f"{server}_count", **boom, error_type="DownstreamFailed") == 1  # the server raised
    assert sample(text, f"{server}_count", **boom, error_type="PolicyDenied") == 1  # bob's, refused
    client = "mcp_client_operation_duration_seconds"
    forwarded = {"mcp_method_name": "tools/call", "gen_ai_tool_name": "echo", "gateway_server": "k"}
    assert sample(text, f"{client}_count", **forwarded) == 3
    assert f"# TYPE {server} histogram" in text and f"# TYPE {client} histogram" in text


async def test_metrics_and_the_page_need_the_same_credentials_as_mcp(base: str) -> None:
    for path in ("/metrics", "/ui", "/ui/calls", "/ui/think", "/ui/calls/0-1"):
        assert (await get(base, path, token=None)).status_code == 401, path
        assert (await get(base, path, token="wrong-token-0123456789")).status_code == 401, path
    assert (await get(base, "/ui/static/page.js", token=None)).status_code == 200  # the same for all, no data
    assert (await get(base, "/ui/login", token=None)).status_code == 200  # the sign-in form


async def test_a_browser_without_a_sign_in_is_sent_to_the_sign_in_form_and_a_program_gets_the_401(base: str) -> None:
    html = {"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}
    for path in ("/ui", "/ui/calls", "/ui/calls/0-1"):
        browsing = await get(base, path, token=None, **html)
        assert browsing.status_code == 303 and browsing.headers["location"] == "/ui/login", path
    assert (await get(base, "/ui", token=None)).status_code == 401  # no HTML asked for: the challenge
    assert (await get(base, "/metrics", token=None, **html)).status_code == 401  # not the page's
    async with httpx2.AsyncClient(timeout=30) as http:
        posted = await http.post(base + "/ui/reload", headers=html)
    assert posted.status_code == 401  # a POST is not a page to open


async def test_another_identitys_stored_output_says_whose_it_is_to_an_admin(calling: str) -> None:
    async with http_client(calling, headers=bearer(BOB)) as client:
        await client.call_tool("k.blob", {"n": 50_000})
    seen = rows((await get(calling, "/ui/calls")).text)
    assert seen[0]["tool"] == "k.blob"
    page = (await get(calling, f"/ui/calls/{seen[0]['number']}")).text  # alice, an admin, looks at bob's call
    assert "This output is bob&#39;s" in page and "only bob can read it" in page
    assert 'id="stored-link"' not in page  # no link to a 404
    assert "50,000 bytes stored" in (await get(calling, f"/ui/calls/{seen[0]['number']}", token=BOB)).text


async def test_a_tool_tried_from_the_page_is_the_viewers_call_refused_by_policy_and_safe_from_other_sites(
    own: str,
) -> None:
    async with httpx2.AsyncClient(base_url=own, timeout=30) as http:
        form = await http.get("/ui/try/k.boom", headers=bearer(BOB))
        assert form.status_code == 200 and 'id="denied"' in form.text and "no-boom-for-devs" in form.text
        forged = await http.post(
            "/ui/try/k.boom", data={"confirm": "yes"}, headers={**bearer(BOB), "Origin": "https://evil.example"}
        )
        unconfirmed = await http.post("/ui/try/k.echo", data={"text": "x"}, headers=bearer(BOB))
        bad = await http.post("/ui/try/k.blob", data={"n": "many", "confirm": "yes"}, headers=bearer(BOB))
        tried = await http.post("/ui/try/k.boom", data={"confirm": "yes"}, headers=bearer(BOB))
        missing = await http.get("/ui/try/k.nosuch", headers=bearer(BOB))
    assert forged.status_code == 403 and unconfirmed.status_code == 400 and "tick the confirmation" in unconfirmed.text
    assert bad.status_code == 400 and "Field &#39;n&#39; wants integer; &#39;many&#39; is not one" in bad.text
    assert missing.status_code == 404
    assert tried.status_code == 303 and tried.headers["location"].startswith("/ui/calls/")
    detail = (await get(own, tried.headers["location"], token=BOB)).text  # bob's own call, refused as any call is
    assert 'id="outcome">refused<' in detail and "gateway page" in detail
    assert [r["tool"] for r in rows((await get(own, "/ui/calls", token=BOB)).text)] == ["k.boom", "k.boom"]


async def test_the_live_calls_stream_says_when_a_call_the_viewer_may_see_arrives(calling: str) -> None:
    async with httpx2.AsyncClient(timeout=30) as http:
        async with http.stream("GET", calling + "/ui/calls/live", headers=bearer(BOB)) as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            lines = stream.aiter_lines()
            assert await anext(lines) == ": still here"  # subscribed: what bob may see was read once
            async with http_client(calling, headers=bearer(ALICE)) as client:
                await client.call_tool("k.echo", {"text": "alice's"})  # not bob's to see: no event
            async with http_client(calling, headers=bearer(BOB)) as client:
                await client.call_tool("k.echo", {"text": "bob's"})
            with anyio.fail_after(20):
                async for line in lines:
                    if line.startswith("event:"):
                        break
            assert line == "event: calls"
            ref = (await anext(lines)).removeprefix("data: ")
    assert rows((await get(calling, "/ui/calls", token=BOB)).text)[0]["number"] == ref


async def test_the_live_stream_tells_at_once_of_a_call_made_after_the_page_was_drawn(calling: str) -> None:
    drawn = rows((await get(calling, "/ui/calls", token=BOB)).text)[0]["number"]  # the newest call the page showed
    async with http_client(calling, headers=bearer(BOB)) as client:
        await client.call_tool("k.echo", {"text": "before the stream began"})
    async with httpx2.AsyncClient(timeout=30) as http:
        async with http.stream("GET", f"{calling}/ui/calls/live?after={drawn}", headers=bearer(BOB)) as stream:
            lines = stream.aiter_lines()
            with anyio.fail_after(20):  # without `after` the stream starts from this call and never tells of it
                assert await anext(lines) == "event: calls"
            ref = (await anext(lines)).removeprefix("data: ")
    assert ref != drawn and rows((await get(calling, "/ui/calls", token=BOB)).text)[0]["number"] == ref


async def test_a_browser_signs_in_with_its_token_into_a_sign_in_of_its_own_that_sign_out_ends(base: str) -> None:
    async with httpx2.AsyncClient(base_url=base, timeout=30) as http, httpx2.AsyncClient(timeout=30) as thief:
        wrong = await http.post("/ui/login", data={"token": "wrong-token-0123456789"})
        assert wrong.status_code == 401 and 'id="login-error"' in wrong.text
        forged = await http.post("/ui/login", data={"token": BOB}, headers={"Origin": "https://evil.example"})
        assert forged.status_code == 403 and "set-cookie" not in forged.headers
        signed = await http.post("/ui/login", data={"token": BOB})
        assert signed.status_code == 303 and signed.headers["location"] == "/ui"
        cookie = signed.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/ui" in cookie
        assert "Max-Age=28800" in cookie  # auth.page_session_s: it ends on its own
        value = http.cookies["gateway_page"]
        assert BOB.encode() not in base64.urlsafe_b64decode(value + "=")  # a random id, not the token
        page = await http.get("/ui")  # the client keeps the cookie, as a browser does
        assert page.status_code == 200 and "bob · read-only" in page.text
        assert (await http.get("/metrics")).status_code == 401  # the cookie is for /ui only
        sent = {"Cookie": f"gateway_page={value}"}  # copied, sent by another client by hand
        answer = await http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers=sent)
        assert answer.status_code == 401
        assert (await thief.get(base + "/ui/calls", headers=sent)).status_code == 200  # a copy works, until...
        out = await http.post("/ui/logout")
        assert out.status_code == 303 and 'gateway_page=""' in out.headers["set-cookie"]
        assert (await http.get("/ui")).status_code == 401
        assert (await thief.get(base + "/ui/calls", headers=sent)).status_code == 401  # ...sign-out ends it
        assert (await http.post("/ui/logout", headers=sent)).status_code == 303  # a dead sign-in still signs out


async def test_signing_in_again_ends_the_browsers_earlier_sign_in_and_a_tls_proxys_gets_a_secure_cookie(
    base: str,
) -> None:
    async with httpx2.AsyncClient(base_url=base, timeout=30) as http:
        plain = await http.post("/ui/login", data={"token": BOB})
        first = plain.cookies["gateway_page"]
        behind_tls = await http.post("/ui/login", data={"token": ALICE}, headers={"X-Forwarded-Proto": "https"})
        second = behind_tls.cookies["gateway_page"]
    assert "secure" not in plain.headers["set-cookie"].lower()
    assert "secure" in behind_tls.headers["set-cookie"].lower()  # the trusted proxy says the browser used TLS
    async with httpx2.AsyncClient(base_url=base, timeout=30) as http:
        assert (await http.get("/ui", headers={"Cookie": f"gateway_page={first}"})).status_code == 401
        assert "alice" in (await http.get("/ui", headers={"Cookie": f"gateway_page={second}"})).text


async def test_a_page_asked_for_from_another_origin_is_refused(base: str) -> None:
    for path in ("/ui", "/ui/calls", "/metrics"):
        answer = await get(base, path, Origin="https://evil.example")
        assert answer.status_code == 403, path
    async with httpx2.AsyncClient(timeout=30) as http:
        forged = await http.post(base + "/ui/reload", headers={**bearer(ALICE), "Origin": "https://evil.example"})
    assert forged.status_code == 403


async def test_only_an_admin_may_reload_from_the_page(own: str) -> None:
    async with httpx2.AsyncClient(timeout=30) as http:
        bob = await http.post(own + "/ui/reload", headers=bearer(BOB))
        alice = await http.post(own + "/ui/reload", headers=bearer(ALICE))
    assert bob.status_code == 403
    assert "auth.admin_groups" in bob.text and "Not reloaded." in bob.text
    assert alice.status_code == 200 and "Reloaded." in alice.text  # the file, unchanged, reloaded
    assert "Reload config" in (await get(own, "/ui")).text
    assert "Reload config" not in (await get(own, "/ui", token=BOB)).text


async def test_every_tab_answers_with_a_strict_content_security_policy(base: str) -> None:
    for path in ("/ui", "/ui/catalog", "/ui/calls", "/ui/think"):
        answer = await get(base, path)
        assert answer.status_code == 200, path
        policy = answer.headers["content-security-policy"]
        assert "default-src 'none'" in policy and "script-src 'self'" in policy
        assert "unsafe-inline" not in policy
        assert answer.headers["x-frame-options"] == "DENY"
        assert "<script>" not in answer.text  # no inline script: the CSP would refuse it
        assert not re.search(r"(src|href)=\"(https?:)?//", answer.text)  # nothing from another host


async def test_servers_tab_shows_each_server_its_era_and_tools(base: str) -> None:
    text = (await get(base, "/ui")).text
    row = re.search(r'<tr data-server="k" data-state="up">(.*?)</tr>', text, re.DOTALL)
    assert row is not None
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row.group(1), re.DOTALL)
    assert (
        re.sub(r"<[^>]+>", "", cells[1]) == "up" and re.fullmatch(r"\d{4}-\d{2}-\d{2}", cells[2]) and int(cells[3]) > 5
    )
    live = await get(base, "/ui", **{"X-Page-Part": "main"})
    assert live.text.lstrip().startswith("<h1>Servers</h1>")  # the live part alone, for the poller


async def test_servers_tab_says_at_a_glance_how_many_are_down_and_tells_a_missing_command_from_a_network_one(
    tmp_path: Path,
) -> None:
    servers = {
        "k": kitchen("k"),
        "gone": {"transport": "stdio", "command": "/nonexistent/binary"},
        "far": {"transport": "http", "url": f"http://127.0.0.1:{free_port()}/mcp"},
    }
    async with http_gateway(write_config(tmp_path, servers)) as url:
        text = (await get(url, "/ui", token=None)).text
        health = (await get(url, "/healthz", token=None)).json()
    assert health["status"] == "degraded"
    summary = re.search(r'<p id="health" class="health health-(\w+)"[^>]*>(.*?)</p>', text, re.DOTALL)
    assert summary is not None and summary.group(1) == "degraded"
    assert f"2 of {len(health['servers'])} servers down" in summary.group(2) and "degraded" in summary.group(2)

    def state(name: str) -> str:
        row = re.search(rf'<tr data-server="{name}" data-state="(\w+)"><td>{name}</td><td[^>]*>(.*?)</td>', text)
        assert row is not None, name
        return re.sub(r"<[^>]+>", " ", row.group(2))

    assert "cannot start: fix its command" in state("gone") and "unreachable" not in state("gone")
    assert "unreachable" in state("far") and "cannot start" not in state("far")
    assert re.search(r"since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(\d+ s\)", state("gone"))
    assert state("k").split() == ["up"]


async def test_catalog_shows_every_tool_and_why_the_policy_hides_one_from_an_identity(base: str) -> None:
    text = (await get(base, "/ui/catalog")).text
    assert re.search(r"<th>alice</th><th>bob</th>", text)
    boom = re.search(r'<tr data-tool="k.boom">(.*?)</tr>', text, re.DOTALL)
    assert boom is not None
    assert 'class="listed">listed' in boom.group(1)
    assert "no-boom-for-devs" in boom.group(1)
    bob_view = (await get(base, "/ui/catalog", token=BOB)).text
    assert "<th>alice</th>" not in bob_view  # a non-admin sees its own listing only
    assert "hidden: no-boom-for-devs" in boom.group(1)  # the rule named in the cell...
    denial = re.findall(r'<li data-denial="([^"]+)"><strong>[^<]*</strong>: ([^<]*)</li>', text)
    assert denial == [("no-boom-for-devs", "denied by &#39;k.boom&#39;")]  # ...its reason once, below


async def test_catalog_says_what_each_client_rule_is_actually_listed_as_tools_list_lists_it(tmp_path: Path) -> None:
    exposure = {"mode": "all", "clients": [{"client": "mcp", "mode": "auto", "max_tools": 6}]}
    async with http_gateway(write_config(tmp_path, {"k": kitchen("k")}, exposure=exposure)) as url:
        async with http_client(url) as client:  # the Python client names itself "mcp": under the rule
            listed = (await client.list_tools()).tools
        text = (await get(url, "/ui/catalog", token=None)).text
    auto = re.search(r'<tr data-rule="mcp">(.*?)</tr>', text, re.DOTALL)
    everything = re.search(r'<tr data-rule="\(default\)">(.*?)</tr>', text, re.DOTALL)
    assert auto is not None and everything is not None
    auto_cells = re.findall(r"<td>(.*?)</td>", auto.group(1))
    assert int(auto_cells[2]) == len(listed) <= 6  # the very count tools/list gave that client, not every tool
    every = int(re.findall(r"<td>(.*?)</td>", everything.group(1))[2])
    assert every > len(listed) and auto_cells[5].startswith(
        f"{every} tools"
    )  # what listing everything would be, beside


def rows(text: str) -> list[dict[str, Any]]:
    return [
        {"number": n, "outcome": o, "tool": re.findall(r"<td>(.*?)</td>", body)[3]}
        for n, o, body in re.findall(
            r'<tr data-call="([0-9a-f]+-\d+)" data-outcome="([^"]*)">(.*?)</tr>', text, re.DOTALL
        )
    ]


async def test_calls_tail_shows_each_call_and_opens_one_beside_what_the_model_received(base: str) -> None:
    seen = rows((await get(base, "/ui/calls")).text)
    assert [r["tool"] for r in seen] == ["k.boom", "k.blob", "k.boom", "k.echo", "k.echo", "k.echo"]
    assert seen[0]["outcome"] == "refused" and seen[2]["outcome"] == "server error"
    assert [r["tool"] for r in rows((await get(base, "/ui/calls", token=BOB)).text)] == ["k.boom"]  # its own
    first = (await get(base, f"/ui/calls/{seen[-1]['number']}")).text
    before = re.search(r'<section id="before">(.*?)</section>', first, re.DOTALL)
    after = re.search(r'<section id="after">(.*?)</section>', first, re.DOTALL)
    assert before is not None and after is not None
    assert "hello 0" in before.group(1) and "hello 0" in after.group(1)
    assert 'data-kind="bootstrap"' in after.group(1) and "bootstrap" not in before.group(1)
    assert "Sent to server &#39;k&#39; as its tool &#39;echo&#39;" in first
    spilled = (await get(base, f"/ui/calls/{seen[1]['number']}")).text
    assert "Spilled whole to the output store" in spilled and "xxxx" in spilled
    assert (await get(base, f"/ui/calls/{seen[1]['number']}", token=BOB)).status_code == 404  # alice's


async def test_a_failed_calls_detail_shows_what_was_sent_what_the_server_said_and_what_the_model_got(
    base: str,
) -> None:
    seen = rows((await get(base, "/ui/calls")).text)
    crashed = (await get(base, f"/ui/calls/{seen[2]['number']}")).text
    assert 'id="outcome">server error<' in crashed
    assert "Sent to server &#39;k&#39; as its tool &#39;boom&#39;" in crashed and "Refused" not in crashed
    received = re.search(r'<div id="received">(.*?)</div>', crashed, re.DOTALL)
    assert received is not None  # the error text the model read, then the gateway's hint marked as its addition
    blocks = re.findall(r'<pre( class="added" data-kind="(\w+)")?>(.*?)</pre>', received.group(1), re.DOTALL)
    assert "Server &#39;k&#39; failed" in blocks[0][2] and blocks[0][1] == ""
    assert [k for _, k, t in blocks if "the server failed, not your arguments" in t] == ["error"]
    refused = (await get(base, f"/ui/calls/{seen[0]['number']}")).text
    assert "Not sent: refused by policy rule &#39;no-boom-for-devs&#39;." in refused
    assert "closed to you by the gateway&#39;s policy" in refused  # what bob's model read, marked as added
    assert 'id="outcome">refused<' in refused


async def test_the_catalog_search_box_shows_find_tools_ranking_as_the_viewer_would_get_it(base: str) -> None:
    found = (await get(base, "/ui/catalog?q=report+the+length+of+text")).text
    assert re.findall(r'<tr data-hit="([^"]+)">', found)[0] == "k.measure"
    hidden = (await get(base, "/ui/catalog?q=raise+ValueError+kaboom", token=BOB)).text
    assert "k.boom" not in re.findall(r'<tr data-hit="([^"]+)">', hidden)  # the policy hides it from bob
    assert "k.boom" in re.findall(r'<tr data-hit="([^"]+)">', (await get(base, "/ui/catalog?q=kaboom")).text)


async def test_metrics_tab_shows_calls_errors_and_percentiles_per_tool_and_server(base: str) -> None:
    text = (await get(base, "/ui/metrics")).text

    def row(kind: str, name: str) -> list[str]:
        found = re.search(rf'<tr data-{kind}="{re.escape(name)}">(.*?)</tr>', text, re.DOTALL)
        assert found is not None, f"no {kind} {name}"
        return re.findall(r"<td[^>]*>(.*?)</td>", found.group(1))

    # By, Name, Calls, Calls/s, ok, tool error, server error, timeout, refused, p50, p99
    echo = row("tool", "k.echo")
    assert echo[2] == echo[4] == "3" and echo[6] == "0" and 0 < float(echo[9]) <= float(echo[10])
    assert row("tool", "k.boom")[2] == "2" and row("tool", "k.boom")[6:9] == ["1", "0", "1"]  # raised; refused
    rule = row("rule", "policy rule &#39;no-boom-for-devs&#39;")
    assert rule[2] == "1" and rule[4:9] == ["0", "0", "0", "0", "1"]
    server = row("server", "k")
    assert server[2] == "5" and server[8] == "0"  # bob's refused call asked no server: not k's, not an error
    assert 'data-server="gateway"' not in text
    bob = (await get(base, "/ui/metrics", token=BOB)).text
    assert 'data-tool="k.echo"' not in bob  # alice's calls are not bob's figures


async def test_metrics_and_the_calls_tab_stay_bounded_whatever_names_callers_send(tmp_path: Path) -> None:
    async with http_gateway(write_config(tmp_path, {"k": kitchen("k")})) as url:
        async with http_client(url) as client:
            await client.call_tool("k.echo", {"text": "x"})
            await client.call_tool("k.nosuch_first", {})
            before = len((await get(url, "/metrics", token=None)).content)
            for _ in range(100):
                assert (await client.call_tool(f"k.nosuch_{uuid.uuid4()}", {})).is_error
            for _ in range(2):
                assert (await client.call_tool("k." + "y" * 1_000_000, {})).is_error
            assert (await client.call_tool('k.<script>alert("x")</script>', {})).is_error
        after = (await get(url, "/metrics", token=None)).text
        calls = (await get(url, "/ui/calls", token=None)).text
    assert len(after.encode()) <= before + 200  # the same series, bigger counts (before: +1 MB a name, +3 KB a uuid)
    assert 'gen_ai_tool_name="_OTHER",error_type="UnknownName",le="+Inf"} 104' in after
    assert "<script>" not in after and "&lt;script&gt;" in calls  # the page escapes what it shows
    assert len(calls) < 200_000 and "k." + "y" * 125 + "…<" in calls  # the page shows the names cut
