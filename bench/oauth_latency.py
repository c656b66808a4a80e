"""What acting as each person on an OAuth-protected server costs (issue 34): per call, and at sign-in across replicas.

Usage, from the repository root: `.venv/bin/python -m bench.oauth_latency [--calls 200] [--rounds 5] [--people 8]`.

1. Added latency per call with a cached OAuth token vs a static header, against the same real server
   (`tests/servers/guarded.py`: the same token check either way). One stdio gateway holds six entries for it:
   `auth: {type: oauth}` (signed in once with `gateway login`), `headers: {Authorization: Bearer …}` (a token
   fetched from the same authorization server) and a second, identical static entry (the A/A control), each with
   the downstream on the 2025-11-25 handshake era (`protocol: legacy`) and on 2026-07-28 (`protocol: modern`).
   Sequential calls of `whoami`, the six interleaved call by call in an order shuffled each time (seeded; `--rounds` x
   `--calls` each); p50/p90 per entry, the oauth/static and static-B/static ratios per era, and each one's spread
   over the rounds (lowest to highest of the per-round p50 ratios). Target: within noise, i.e. the oauth/static
   spread overlaps the A/A spread.
2. Sign-in to the first successful call through a replica other than the one that took the callback: two HTTP
   gateways on one Redis. A person's session on replica B is told to sign in; their browser signs in through
   replica A (`/connect` -> the authorization server -> A's `/oauth/callback`); then B is called until it answers as
   them. Timed from the callback's answer to B's first success (and the calls it took), beside the same through A
   itself, people alternating. The browser part (link to callback) is printed too.
"""

import argparse
import base64
import hashlib
import json
import os
import random
import re
import secrets
import statistics
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import anyio
import httpx2
import mcp.types as types
from cryptography.fernet import Fernet
from mcp import Client

from bench._harness import percentile, table
from tests.conformance_client import sign_in as gateway_login
from tests.harness import ROOT, gateway_params, http_client, http_gateways, text_of, write_config
from tests.servers.guarded import serving
from tests.services import redis_server

ERAS = {"2025-11-25": "legacy", "2026-07-28": "modern"}
LINK = re.compile(r"Sign in to forge: (\S+/connect/forge\?ticket=\S+) — then call again")
MAX_TRIES = 50


def answer(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def static_token(base: str) -> str:
    """A token for the bench's static header, from the same authorization server (PKCE, the resource indicator)."""
    redirect, verifier = "http://127.0.0.1/cb", secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    async with httpx2.AsyncClient() as http:
        client = (await http.post(f"{base}/register", json={"redirect_uris": [redirect]})).json()["client_id"]
        query = {"client_id": client, "redirect_uri": redirect, "response_type": "code", "resource": f"{base}/mcp"}
        query |= {"code_challenge": challenge, "code_challenge_method": "S256", "login_hint": "alice"}
        back = await http.get(f"{base}/authorize?{urlencode(query)}")
        code = back.headers["location"].split("code=")[1].split("&")[0]
        form = {"grant_type": "authorization_code", "code": code, "code_verifier": verifier, "redirect_uri": redirect}
        token = await http.post(f"{base}/token", data={**form, "resource": f"{base}/mcp"})
        return str(token.json()["access_token"])


async def timed(client: Client, tool: str) -> float:
    started = time.perf_counter()
    result = await client.call_tool(tool, {})
    elapsed = time.perf_counter() - started
    if result.is_error or json.loads(text_of(result)) != {"user": "alice"}:
        raise RuntimeError(f"{tool}: {answer(result)}")
    return elapsed


def per_round(took: dict[str, list[float]], over: str, under: str, calls: int) -> list[float]:
    """p50 of `over` / p50 of `under` in each round of `calls` interleaved calls."""
    a, b = took[over], took[under]
    return [statistics.median(a[i : i + calls]) / statistics.median(b[i : i + calls]) for i in range(0, len(a), calls)]


async def per_call(base: str, folder: Path, calls: int, rounds: int) -> None:
    token = await static_token(base)
    servers: dict[str, Any] = {}
    for era in ERAS.values():
        common = {"transport": "http", "url": f"{base}/mcp", "protocol": era}
        servers[f"oauth_{era}"] = {**common, "auth": {"type": "oauth"}}
        servers[f"static_{era}"] = {**common, "headers": {"Authorization": f"Bearer {token}"}}
        # The A/A control: a second entry exactly like the first; its ratio to it is what noise alone gives
        servers[f"staticb_{era}"] = {**common, "headers": {"Authorization": f"Bearer {token}"}}
    config = write_config(folder, servers, think={"state_dir": str(folder / "state")})
    os.environ["GATEWAY_TOKEN_KEY"] = Fernet.generate_key().decode()  # `gateway login`'s, run in this process
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for era in ERAS.values():
        await gateway_login(config, [], f"oauth_{era}")
    took: dict[str, list[float]] = {name: [] for name in servers}
    async with Client(gateway_params(config, env=env), mode="legacy") as client:
        for name in servers:  # warm: each connection made, each token loaded once
            await timed(client, f"{name}.whoami")
        names, order = list(servers), random.Random(34)
        for _ in range(rounds * calls):  # call by call, so a load that drifts hits all alike, in an order shuffled
            order.shuffle(names)  # each time: a call costs more right after a call of the other era (a rotation
            for name in names:  # gave each entry the same predecessor, and the first of each era paid for it)
                took[name].append(await timed(client, f"{name}.whoami"))
    rows, noise = [], []
    for label, era in ERAS.items():
        oauth, static, control = took[f"oauth_{era}"], took[f"static_{era}"], took[f"staticb_{era}"]
        kinds = (("oauth (cached token)", oauth), ("static header", static), ("static header B (A/A)", control))
        for kind, values in kinds:
            p50, p90 = percentile(values, 0.5), percentile(values, 0.9)
            assert p50 is not None and p90 is not None
            rows.append([label, kind, f"{p50 * 1000:.2f}", f"{p90 * 1000:.2f}", str(len(values))])
        for kind, over in (("oauth/static", oauth), ("static-B/static (A/A)", control)):
            ratio = statistics.median(over) / statistics.median(static)
            delta = (statistics.median(over) - statistics.median(static)) * 1e6
            rows.append([label, f"ratio {kind} (p50)", f"{ratio:.3f}", f"{delta:+.0f} µs", ""])
        spreads = [per_round(took, f"{name}_{era}", f"static_{era}", calls) for name in ("oauth", "staticb")]
        (o_low, o_high), (c_low, c_high) = ((min(r), max(r)) for r in spreads)
        within = "yes" if o_low <= c_high and c_low <= o_high else "no"
        noise.append([label, f"{o_low:.3f}–{o_high:.3f}", f"{c_low:.3f}–{c_high:.3f}", within])
    print(f"\n1. Per call through the gateway (stdio, {rounds * calls} calls each, interleaved call by call):")
    table(["downstream era", "auth", "p50 ms", "p90 ms", "calls"], rows, {2, 3, 4})
    print(
        f"\n   Noise: per-round p50 ratios over {rounds} rounds of {calls} calls, min–max; within noise = they overlap:"
    )
    table(["downstream era", "oauth/static", "static-B/static (A/A)", "within noise"], noise, {1, 2})


async def sign_in(link: str, user: str) -> tuple[float, float]:
    """The browser's part: (when the callback answered, seconds from the link to then)."""
    started = time.perf_counter()
    async with httpx2.AsyncClient() as browser:
        to_server = await browser.get(link)
        back = await browser.get(f"{to_server.headers['location']}&login_hint={user}")
        done = await browser.get(back.headers["location"])
        if done.status_code != 200:
            raise RuntimeError(f"callback answered {done.status_code}: {done.text}")
    now = time.perf_counter()
    return now, now - started


async def first_success(client: Client, user: str) -> tuple[float, int]:
    for tries in range(1, MAX_TRIES + 1):
        result = await client.call_tool("forge.whoami", {})
        if not result.is_error and json.loads(text_of(result)) == {"user": user}:
            return time.perf_counter(), tries
    raise RuntimeError(f"{user}: no success through the replica in {MAX_TRIES} calls: {answer(result)}")


async def across_replicas(base: str, folder: Path, people: int) -> None:
    users = [f"p{i}" for i in range(people)]
    tokens = [{"name": u, "token": f"{u}-front-door-0123456789"} for u in users]
    os.environ["GATEWAY_TOKEN_KEY"] = Fernet.generate_key().decode()  # the replicas inherit it: one key
    server = {"transport": "http", "url": f"{base}/mcp", "auth": {"type": "oauth"}}
    with redis_server(folder / "redis") as redis:
        configs = []
        for name in ("a", "b"):
            (folder / name).mkdir()
            store = {"backend": "redis", "url": redis.url, "prefix": "bench:"}
            sections = {"auth": {"tokens": tokens}, "store": store, "think": {"state_dir": str(folder / name)}}
            configs.append(write_config(folder / name, {"forge": server}, **sections))
        rows: dict[str, list[tuple[float, float, int]]] = {"through B (other)": [], "through A (same)": []}
        async with http_gateways(*configs) as (replica_a, replica_b):
            for n, user in enumerate(users):
                bearer = {"authorization": f"Bearer {user}-front-door-0123456789"}
                other = n % 2 == 0
                async with AsyncExitStack() as stack:
                    on_a = await stack.enter_async_context(http_client(replica_a, headers=bearer))
                    on_b = await stack.enter_async_context(http_client(replica_b, headers=bearer)) if other else on_a
                    asked = await on_b.call_tool("forge.whoami", {})  # the session is told to sign in
                    assert asked.is_error, answer(asked)
                    link = LINK.search(answer(await on_a.call_tool("forge.whoami", {})))
                    assert link is not None
                    called_back, browser_s = await sign_in(link.group(1), user)
                    succeeded, tries = await first_success(on_b, user)
                rows["through B (other)" if other else "through A (same)"].append(
                    (succeeded - called_back, browser_s, tries)
                )
    print(f"\n2. Sign-in through replica A to the first successful call ({people} people, alternating):")
    out = []
    for label, runs in rows.items():
        after = [r[0] * 1000 for r in runs]
        browser = [r[1] * 1000 for r in runs]
        out.append(
            [
                label,
                f"{statistics.median(after):.1f}",
                f"{max(after):.1f}",
                f"{statistics.median(browser):.1f}",
                str(max(r[2] for r in runs)),
                str(len(runs)),
            ]
        )
    table(
        ["first call", "callback->call p50 ms", "max ms", "link->callback p50 ms", "max calls", "n"],
        out,
        {1, 2, 3, 4, 5},
    )


async def run(base: str, tmp: Path, calls: int, rounds: int, people: int) -> None:
    (tmp / "one").mkdir()
    await per_call(base, tmp / "one", calls, rounds)
    (tmp / "two").mkdir()
    await across_replicas(base, tmp / "two", people)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--people", type=int, default=8)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder, serving(Path(folder)) as base:  # serving() runs its own loop
        anyio.run(run, base, Path(folder), args.calls, args.rounds, args.people)


if __name__ == "__main__":
    main()
