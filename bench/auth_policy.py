"""Teams: what identity and policy cost per call.

Usage, from the repository root: `.venv/bin/python -m bench.auth_policy [--checks 3000] [--calls 300]`.

1. In process, with the issuer's keys cached (a local JWKS server, fetched once): p50/p99 of one JWT
   check (`JwtVerifier.verify`, RS256 and ES256: signature, iss, aud, exp/nbf, scopes), of a static
   token's digest compare, and of the policy's verdict on one tool with six rules. Target: JWT < 0.2 ms p50.
2. Echo p50 through `gateway serve --http` (kitchen over stdio) with nothing on, with JWT auth and policy
   on, and with auth, policy and the audit log on, interleaved call by call in one run so a shared
   machine's drift hits all alike. Target: auth+policy / off ≤ 1.1.
"""

import argparse
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
from mcp import Client

from bench._harness import echo_once, kill_leftover_children, percentile, table
from bench._processes import gateway_config
from gateway.fronts.auth.bearer_jwt import JwtVerifier
from gateway.fronts.auth.jwks import KeySet
from gateway.fronts.auth.static import StaticToken, StaticTokens, digest
from gateway.middleware.policy import Policy, Rule, Subject
from gateway.session import Identity
from tests.harness import http_client, http_gateway, kitchen
from tests.idp import AUDIENCE, ISSUER, IdentityProvider, serving

JWT_TARGET_MS = 0.2
ECHO_TARGET = 1.1
RULES = [
    Rule("no-deletes", deny=("*.delete_*", "*.drop_*")),
    Rule("dev", groups=("dev",), allow=("k.*", "gitlab.*", "jira.get_*")),
    Rule("ops", groups=("ops",), allow=("*",)),
    Rule("interns", groups=("interns",), read_only=True),
    Rule("bots", identities=("bot-*",), deny=("jira.*",)),
    Rule("everyone", deny=("*.admin_*",)),
]


async def timed(n: int, step: Callable[[], Awaitable[Any]]) -> list[float]:
    for _ in range(min(n // 10, 200)):
        await step()
    times = []
    for _ in range(n):
        start = time.perf_counter()
        await step()
        times.append(time.perf_counter() - start)
    return times


async def checks(idp: IdentityProvider, n: int) -> list[list[str]]:
    verifier = JwtVerifier(KeySet(idp.jwks_url), issuer=ISSUER, audience=AUDIENCE, required_scopes=["mcp"])
    rsa, ec = idp.token("alice", scope="mcp", ttl_s=3600), idp.token("alice", kid="ec-1", scope="mcp", ttl_s=3600)
    static = StaticTokens([StaticToken(f"user-{i}", digest(f"token-{i:04d}-abcdefgh")) for i in range(50)])
    policy = Policy(RULES)
    who = Identity("alice", "jwt", "alice", groups=frozenset({"dev"}))
    tool = Subject("tool", "k", "k.echo", "echo", types.Tool(name="k.echo", input_schema={"type": "object"}))

    async def static_check() -> None:
        static.identify("token-0049-abcdefgh")

    async def policy_check() -> None:
        policy.denial(who, tool)

    sides: list[tuple[str, Callable[[], Awaitable[Any]], float | None]] = [
        ("JWT RS256 (cached keys)", lambda: verifier.verify(rsa), JWT_TARGET_MS),
        ("JWT ES256 (cached keys)", lambda: verifier.verify(ec), JWT_TARGET_MS),
        ("static token (50 known)", static_check, None),
        ("policy verdict (6 rules)", policy_check, None),
    ]
    rows = []
    for name, step, target in sides:
        times = await timed(n, step)
        p50, p99 = (percentile(times, q) or 0.0 for q in (0.5, 0.99))
        verdict = "" if target is None else ("ok" if p50 * 1000 < target else "OVER")
        rows.append([name, f"{p50 * 1e6:.1f}", f"{p99 * 1e6:.1f}", f"< {target} ms {verdict}" if target else ""])
    assert verifier.keys.fetches == 1, "the keys were fetched more than once"
    return rows


async def echoes(directory: Path, idp: IdentityProvider, calls: int) -> list[list[str]]:
    auth = {"resource_url": AUDIENCE, "jwt": {"issuer": ISSUER, "jwks_url": idp.jwks_url, "required_scopes": ["mcp"]}}
    policy = {"rules": [{"name": r.name, "groups": list(r.groups), "deny": list(r.deny)} for r in RULES]}
    configs = {
        "off": {},
        "auth+policy": {"auth": auth, "policy": policy},
        "auth+policy+audit": {"auth": auth, "policy": policy, "audit": {"path": "audit.jsonl"}},
    }
    token = {"authorization": f"Bearer {idp.token('alice', scope='mcp', groups=['dev'], ttl_s=3600)}"}
    clients: dict[str, Client] = {}
    async with AsyncExitStack() as stack:
        for name, sections in configs.items():
            config = gateway_config(directory / name.replace("+", "-"), {"k": kitchen("k")}, **sections)
            base = await stack.enter_async_context(http_gateway(config))
            headers = token if sections else None
            clients[name] = await stack.enter_async_context(http_client(base, headers=headers))
        for client in clients.values():
            for _ in range(30):
                await echo_once(client, "k.echo")
        latency: dict[str, list[float]] = {name: [] for name in clients}
        order = list(clients)
        for i in range(calls):
            for name in order[i % 3 :] + order[: i % 3]:  # rotated: no side always goes first
                latency[name].append(await echo_once(clients[name], "k.echo"))
    off = statistics.median(latency["off"])
    rows = []
    for name, times in latency.items():
        p50, p99 = statistics.median(times), percentile(times, 0.99) or 0.0
        ratio = p50 / off
        verdict = f"≤ {ECHO_TARGET} {'ok' if ratio <= ECHO_TARGET else 'OVER'}" if name == "auth+policy" else ""
        rows.append([name, f"{p50 * 1000:.3f}", f"{p99 * 1000:.3f}", f"{ratio:.2f}", verdict])
    return rows


async def main(opts: argparse.Namespace) -> None:
    with serving(IdentityProvider()) as idp, tempfile.TemporaryDirectory(prefix="bench-auth-") as tmp:
        print(f"In process, {opts.checks} checks each (µs):")
        table(["check", "p50 µs", "p99 µs", "target"], await checks(idp, opts.checks), right={1, 2})
        print(f"\nEcho through `gateway serve --http`, {opts.calls} calls each, interleaved (ms):")
        table(["gateway", "p50 ms", "p99 ms", "/off", "target"], await echoes(Path(tmp), idp, opts.calls), {1, 2, 3})
    leftover = kill_leftover_children()
    if leftover:
        print(leftover)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checks", type=int, default=3000)
    parser.add_argument("--calls", type=int, default=300)
    anyio.run(main, parser.parse_args())
