"""The page in a real browser: Debian's headless Chromium, driven over the DevTools protocol, opens each tab of a
`gateway serve --http` that served real calls (one spilled, one refused by policy, one failing), at 1280 px and
390 px. What a person would see is read from the DOM; screenshots are saved to test-artifacts/page/ and must not
be blank; any console error, uncaught exception, failed request or CSP violation fails the test. Skipped without
Chromium (`scripts/services` installs it)."""

import json
import re
import shutil
import struct
import zlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import mcp.types as types
import pytest
from mcp import Client

from tests.harness import ROOT, http_client, http_gateway, kitchen, write_config
from tests.system.browser import Browser
from tests.think.harness import FIXTURES

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("chromium") is None, reason="no chromium (scripts/services installs it)"),
]

SHOTS = ROOT / "test-artifacts" / "page"
WIDTHS = (1280, 390)


@pytest.fixture
async def base(tmp_path: Path) -> AsyncIterator[str]:
    config = write_config(
        tmp_path,
        {"k": kitchen("k")},
        policy={"rules": [{"name": "no-boom", "deny": ["k.boom"]}]},
        limits={"max_inline_bytes": 2000, "outputs_dir": str(tmp_path / "outputs")},
        think={"state_dir": str(tmp_path / "think"), "workflows_dirs": [str(FIXTURES)]},
    )
    async with http_gateway(config) as url:
        async with http_client(url) as client:
            await client.call_tool("k.echo", {"text": "hello page"})
            await client.call_tool("k.blob", {"n": 30_000})
            assert (await client.call_tool("k.boom", {})).is_error
            await think_run(client)
        yield url


def answer(result: types.CallToolResult) -> dict[str, Any]:
    assert not result.is_error and isinstance(result.structured_content, dict), result
    return result.structured_content


async def think_run(client: Client) -> None:
    """loop_v1 to its foreach: `shout` skipped by its `when`, `echo_each` expanded, its first item done."""
    ins = answer(await client.call_tool("think.plan", {"workflow": "loop_v1", "params": {"files": ["a.py", "b.py"]}}))
    await client.call_tool(ins["call"], ins["input"])
    ins = answer(await client.call_tool("think.next", {k: ins[k] for k in ("workflow", "run_id", "step_id")}))
    step = {k: ins[k] for k in ("workflow", "run_id", "step_id")}
    ins = answer(await client.call_tool("think.next", {**step, "result_snapshot": {"text": "ok"}}))
    assert ins["step_id"] == "echo_each[0]"
    await client.call_tool("k.echo", {"text": "a.py"})  # observed by the gateway
    await client.call_tool("think.next", {k: ins[k] for k in ("workflow", "run_id", "step_id")})


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    running = Browser(tmp_path / "profile")
    try:
        yield running
    finally:
        running.close()


def pixels_vary(png: bytes) -> bool:
    """Whether a screenshot shows more than one flat colour (the decoded rows hold many distinct bytes)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    data, offset = b"", 8
    while offset < len(png):
        length, kind = struct.unpack(">I4s", png[offset : offset + 8])
        if kind == b"IDAT":
            data += png[offset + 8 : offset + 8 + length]
        offset += 12 + length
    return len(set(zlib.decompress(data))) > 16


def look(browser: Browser, url: str, name: str) -> str:
    """The DOM of `url` at 1280 px; screenshots at each width saved as `name-<width>.png`; no problem reported."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    dom = ""
    for width in WIDTHS:
        browser.open(url, width)
        dom = dom or browser.dom()
        shot = browser.screenshot(SHOTS / f"{name}-{width}.png")
        assert len(shot) > 5000 and pixels_vary(shot), f"{name} at {width} px is blank"
    assert browser.problems == [], f"{url}: {browser.problems}"
    return dom


def cells(dom: str, attribute: str, value: str) -> list[str]:
    row = re.search(rf'<tr {attribute}="{re.escape(value)}"[^>]*>(.*?)</tr>', dom, re.DOTALL)
    assert row is not None, f"no row {attribute}={value}"
    return [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row.group(1), re.DOTALL)]


async def test_each_tab_shows_the_real_servers_tools_and_calls_in_chromium(base: str, browser: Browser) -> None:
    await anyio.to_thread.run_sync(tabs, base, browser)


def tabs(base: str, browser: Browser) -> None:
    servers = look(browser, base + "/ui", "servers")
    k = cells(servers, "data-server", "k")
    assert k[1] == "up" and int(k[3]) >= 10
    assert "anonymous · admin" in servers  # loopback without auth: the operator
    browser.navigate_by("document.querySelector('#reload button').click()")  # a form POST from the page itself
    assert '<p id="reload-result" class="ok">Reloaded.</p>' in browser.dom()

    catalog = look(browser, base + "/ui/catalog", "catalog")
    assert cells(catalog, "data-tool", "k.echo")[-1] == "listed"
    assert "no-boom" in cells(catalog, "data-tool", "k.boom")[-1]

    calls = look(browser, base + "/ui/calls", "calls")
    numbers = re.findall(r'<tr data-call="([0-9a-f]+-\d+)" data-outcome="([^"]*)"', calls)
    tools = [cells(calls, "data-call", n)[3] for n, _ in numbers]
    assert tools[-3:] == ["k.boom", "k.blob", "k.echo"] and "think.plan" in tools
    outcomes = dict(zip(tools[-3:], [outcome for _, outcome in numbers][-3:], strict=True))
    assert outcomes == {"k.boom": "refused", "k.blob": "ok", "k.echo": "ok"}
    assert "spilled" in cells(calls, "data-call", numbers[-2][0])[8]

    spilled = look(browser, f"{base}/ui/calls/{numbers[-2][0]}", "call-spilled")
    assert "Spilled whole to the output store" in spilled
    preview = re.search(r'<pre id="stored-text">(x+)', spilled)
    assert preview is not None and 1000 < len(preview.group(1)) <= 4000  # the stored output, its preview
    output_id = re.findall(r'href="/ui/outputs/([0-9a-f]{24})/download"', spilled)[0]
    assert "30,000 bytes stored" in look(browser, f"{base}/ui/outputs/{output_id}", "output")
    first = look(browser, f"{base}/ui/calls/{numbers[-1][0]}", "call")
    before = re.search(r'<section id="before">(.*?)</section>', first, re.DOTALL)
    after = re.search(r'<section id="after">(.*?)</section>', first, re.DOTALL)
    assert before is not None and after is not None
    assert "hello page" in before.group(1) and 'data-kind="bootstrap"' in after.group(1)

    failed = look(browser, f"{base}/ui/calls/{numbers[-3][0]}", "call-failed")
    assert "Not sent: refused by policy rule" in failed
    model_got = browser.evaluate("[...document.querySelectorAll('#received pre')].map(p => p.innerText)")
    assert "is not available to anonymous" in model_got[0]  # the refusal as the model read it...
    assert any("do not retry" in text for text in model_got[1:])  # ...and the gateway's hint, marked
    marked = browser.evaluate("getComputedStyle(document.querySelector('#received pre.added')).borderLeftWidth")
    assert marked == "4px"

    figures = look(browser, base + "/ui/metrics", "metrics")
    assert cells(figures, "data-tool", "k.boom")[8] == "1" and cells(figures, "data-tool", "k.echo")[2] == "2"

    think = look(browser, base + "/ui/think", "think")
    loop = re.search(r'<section class="workflow" data-workflow="loop_v1">(.*?)</section>', think, re.DOTALL)
    assert loop is not None
    graph, run = re.findall(r"<svg [^>]*>(.*?)</svg>", loop.group(1), re.DOTALL)[:2]
    assert re.findall(r'<g class="node" data-step="([^"]+)">', graph)[:2] == ["echo_each", "shout"]
    assert ("echo_each", "announce") in re.findall(r'data-from="([^"]+)" data-to="([^"]+)"', graph)  # an edge
    statuses = dict(re.findall(r'data-step="([^"]+)" data-status="([^"]+)"', run))
    assert statuses["shout"] == "skipped" and statuses["echo_each"] == "expanded"
    assert statuses["echo_each[0]"] == "done" and statuses["echo_each[1]"] == "pending"
    assert '<g class="node status-pending ready" data-step="echo_each[1]"' in run  # the run's next step stands out
    listed = re.findall(r'<li data-step="([^"]+)"', loop.group(1))
    assert listed[:2] == ["echo_each", "shout"]  # the graph as a list too, for small screens and screen readers
    drawn = "[...document.querySelectorAll('svg.graph path.edge')].every(p => p.getTotalLength() > 10)"
    assert browser.evaluate(drawn) is True  # the browser laid out every edge as a visible curve

    run_id = re.findall(r'data-run="([^"]+)"', loop.group(1))[0]
    opened = look(browser, f"{base}/ui/think/loop_v1/{run_id}", "run")
    assert 'data-identical="true"' in opened and 'data-capture="echoes' in opened


async def test_the_calls_tab_shows_a_new_call_in_place_keeping_the_readers_focus(base: str, browser: Browser) -> None:
    await anyio.to_thread.run_sync(browser.open, base + "/ui/calls", 1280)
    assert "k.measure" not in await anyio.to_thread.run_sync(browser.dom)
    focus = "const a = document.querySelector('#calls tbody a'); a.focus(); a.mine = 'yes'; a.textContent"
    await anyio.to_thread.run_sync(
        browser.evaluate, "document.getSelection().selectAllChildren(document.querySelector('h1'))"
    )
    focused = await anyio.to_thread.run_sync(browser.evaluate, focus)
    async with http_client(base) as client:
        await client.call_tool("k.measure", {"text": "abc"})
    # Resolves once the page's own poller has patched in the call (no reload; no sleep here).
    shown = """new Promise(done => {
        const seen = () => document.querySelector('#calls tbody').innerText.includes('k.measure');
        if (seen()) return done(true);
        new MutationObserver(() => seen() && done(true)).observe(document.body, {childList: true, subtree: true});
    })"""
    with anyio.fail_after(30):
        assert await anyio.to_thread.run_sync(browser.evaluate, shown) is True
    kept = "[document.activeElement.mine, document.activeElement.textContent]"
    assert await anyio.to_thread.run_sync(browser.evaluate, kept) == ["yes", focused]  # the same element, focused
    streamed = "document.getElementById('live').dataset.stream === 'open'"
    assert await anyio.to_thread.run_sync(browser.evaluate, streamed) is True  # told by server-sent events
    selected = await anyio.to_thread.run_sync(browser.evaluate, "document.getSelection().toString()")
    assert selected == "Calls"  # the reader's selection survives the update
    new = "[...document.querySelectorAll('#calls tr.new')].map(r => r.innerText)"
    [row] = await anyio.to_thread.run_sync(browser.evaluate, new)
    assert "k.measure" in row
    said = "[document.getElementById('announce').textContent, document.getElementById('live-status').textContent]"
    announced, status = await anyio.to_thread.run_sync(browser.evaluate, said)
    assert announced == "1 new call" and status.startswith("Updated ")
    assert browser.problems == []


async def test_a_filtered_list_exports_as_csv_and_json_with_just_the_calls_it_shows(
    base: str, browser: Browser
) -> None:
    await anyio.to_thread.run_sync(browser.open, base + "/ui/calls?outcome=refused", 1280)
    shown = await anyio.to_thread.run_sync(browser.evaluate, "document.getElementById('counts').innerText")
    assert shown.startswith("1 of ") and "recent calls match" in shown
    fetch = "fetch(document.getElementById('export-{}').href, {{credentials: 'same-origin'}}).then(r => r.text())"
    table = await anyio.to_thread.run_sync(browser.evaluate, fetch.format("csv"))
    header, *rows = table.strip().splitlines()
    assert header.startswith("ref,when,identity,client,server,tool,outcome,refusal")
    assert len(rows) == 1 and ",k.boom,refused,policy rule 'no-boom'," in rows[0]
    records = json.loads(await anyio.to_thread.run_sync(browser.evaluate, fetch.format("json")))
    assert [(r["tool"], r["outcome"]) for r in records] == [("k.boom", "refused")]
    assert browser.problems == []


async def test_a_tool_tried_from_the_page_is_a_call_in_calls_with_its_before_and_after(
    base: str, browser: Browser
) -> None:
    await anyio.to_thread.run_sync(try_echo, base, browser)


def try_echo(base: str, browser: Browser) -> None:
    """From the catalog's link to the form, filled and confirmed as a person would, to the recorded call."""
    browser.open(base + "/ui/catalog", 1280)
    browser.navigate_by("document.querySelector('tr[data-tool=\"k.echo\"] a').click()")  # from the catalog
    assert browser.evaluate("location.pathname") == "/ui/try/k.echo"
    browser.screenshot(SHOTS / "try-1280.png")
    unconfirmed = "document.getElementById('f-text').value = 'tried from the page'; document.forms.try.checkValidity()"
    assert browser.evaluate(unconfirmed) is False  # echo may change things (no readOnlyHint): the confirmation first
    browser.navigate_by(
        "document.getElementById('confirm').checked = true; document.getElementById('try').requestSubmit()"
    )
    assert re.fullmatch(r"/ui/calls/[0-9a-f]+-\d+", browser.evaluate("location.pathname"))
    detail = look(browser, browser.evaluate("location.href"), "call-tried")
    before = re.search(r'<section id="before">(.*?)</section>', detail, re.DOTALL)
    after = re.search(r'<section id="after">(.*?)</section>', detail, re.DOTALL)
    assert before is not None and after is not None
    assert "tried from the page" in before.group(1) and "tried from the page" in after.group(1)
    assert "gateway page" in detail  # the client it is recorded under
    browser.open(base + "/ui/calls?client=gateway+page", 1280)
    assert [cells(browser.dom(), "data-call", n)[3] for n in re.findall(r'<tr data-call="([^"]+)"', browser.dom())] == [
        "k.echo"
    ]


TOKEN = "carol-token-0123456789"


@pytest.fixture
async def signed(tmp_path: Path) -> AsyncIterator[str]:
    """A gateway that wants a token, and one call made with it."""
    tokens = [{"name": "carol", "token": TOKEN, "groups": ["dev"]}]
    config = write_config(
        tmp_path, {"k": kitchen("k")}, auth={"tokens": tokens}, think={"state_dir": str(tmp_path / "think")}
    )
    async with http_gateway(config) as url:
        async with http_client(url, headers={"authorization": f"Bearer {TOKEN}"}) as client:
            await client.call_tool("k.echo", {"text": "carol was here"})
        yield url


async def test_a_person_signs_in_with_a_token_and_sees_the_calls(signed: str, browser: Browser) -> None:
    await anyio.to_thread.run_sync(sign_in, signed, browser)


def sign_in(base: str, browser: Browser) -> None:
    browser.open(base + "/ui/calls", 1280)  # no sign-in yet: the form, not a JSON-RPC 401
    assert 'id="login"' in browser.dom() and browser.evaluate("location.pathname") == "/ui/login"
    browser.screenshot(SHOTS / "login-1280.png")
    # Typed into the form and submitted as a person would; the answer redirects to /ui with the cookie set.
    submit = f"document.querySelector('input[name=token]').value = '{TOKEN}'; document.getElementById('login').submit()"
    browser.navigate_by(submit)
    assert "carol · read-only" in browser.dom()
    browser.open(base + "/ui/calls", 1280)
    assert re.findall(r"<td>(k\.\w+)</td>", browser.dom()) == ["k.echo"]
    assert browser.problems == []
