"""Per-user upstream credentials on real processes: each identity's stdio server runs with its own secret,
an HTTP downstream sees each user's header, the pool's cap and idle eviction, and clear missing-secret errors."""

import hashlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import Client
from pydantic import TypeAdapter

from gateway.app.servers import Servers
from gateway.config import ServerConfig
from gateway.config.teams import SecretsConfig
from gateway.downstreams import secrets
from gateway.downstreams.pool import Pool
from gateway.downstreams.relay import Relay
from gateway.session import Identity
from tests.harness import (
    ROOT,
    gateway_params,
    http_client,
    http_gateway,
    kitchen,
    pid_alive,
    port_file_server,
    text_of,
    wait_for,
    write_config,
)

pytestmark = pytest.mark.anyio

HOLDER = str(ROOT / "tests" / "servers" / "holder.py")
TOKENS = {name: f"{name}-token-0123456789" for name in ("alice", "bob", "carol", "dave")}


def holder(**fields: Any) -> dict[str, Any]:
    return {"transport": "stdio", "command": sys.executable, "args": [HOLDER], **fields}


def sha(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def secrets_dir(root: Path, values: dict[str, str]) -> Path:
    root.mkdir(mode=0o700)
    for who, value in values.items():
        (root / who).mkdir(mode=0o700)
        (root / who / "USER_TOKEN").write_text(value)
        (root / who / "USER_TOKEN").chmod(0o600)
    return root


def team(tmp_path: Path, servers: dict[str, Any], **sections: Any) -> Path:
    tokens = [{"name": name, "token": token} for name, token in TOKENS.items()]
    return write_config(tmp_path, servers, auth={"tokens": tokens}, **sections)


def bearer(name: str, **extra: str) -> dict[str, str]:
    return {"authorization": f"Bearer {TOKENS[name]}", **extra}


async def whoami(base: str, name: str, tool: str = "h.whoami", **headers: str) -> dict[str, Any]:
    async with http_client(base, headers=bearer(name, **headers)) as client:
        result = await client.call_tool(tool, {})
    assert not result.is_error, text_of(result)
    answer: dict[str, Any] = json.loads(text_of(result))
    return answer


async def test_two_identities_get_two_processes_each_with_its_own_secret(tmp_path: Path) -> None:
    root = secrets_dir(tmp_path / "secrets", {"alice": "alice-secret", "bob": "bob-secret"})
    config = team(tmp_path, {"h": holder(env={"USER_TOKEN": "${user:USER_TOKEN}"})}, secrets={"dir": str(root)})
    async with http_gateway(config) as base:
        async with http_client(base, headers=bearer("carol")) as client:
            carol_first = await client.call_tool("h.whoami", {})  # nobody's process is up yet
        alice, bob = await whoami(base, "alice"), await whoami(base, "bob")
        alice_again = await whoami(base, "alice")
        dave = await whoami(base, "dave", **{"x-gateway-secret-user-token": "dave-from-header"})
        async with http_client(base, headers=bearer("carol")) as client:
            carol = await client.call_tool("h.whoami", {})
    assert alice["holds_sha256"] == sha("alice-secret") and bob["holds_sha256"] == sha("bob-secret")
    assert alice["pid"] != bob["pid"] and alice_again["pid"] == alice["pid"]
    assert dave["holds_sha256"] == sha("dave-from-header") and dave["pid"] not in (alice["pid"], bob["pid"])
    assert carol_first.is_error and "needs the secret USER_TOKEN for carol" in text_of(carol_first)
    assert carol.is_error
    assert "needs the secret USER_TOKEN for carol" in text_of(carol)
    assert "X-Gateway-Secret-USER-TOKEN" in text_of(carol) and str(root / "carol" / "USER_TOKEN") in text_of(carol)


async def test_a_user_whose_secret_changes_gets_a_process_with_the_new_value_and_the_old_value_keeps_its_own(
    tmp_path: Path,
) -> None:
    # A member is keyed by its identity and a digest of its secrets' values: a new value is a new member.
    config = team(tmp_path, {"h": holder(env={"USER_TOKEN": "${user:USER_TOKEN}"})})
    async with http_gateway(config) as base:
        first = await whoami(base, "alice", **{"x-gateway-secret-user-token": "alice-one"})
        second = await whoami(base, "alice", **{"x-gateway-secret-user-token": "alice-two"})
        again = await whoami(base, "alice", **{"x-gateway-secret-user-token": "alice-one"})
    assert (first["holds_sha256"], second["holds_sha256"]) == (sha("alice-one"), sha("alice-two"))
    assert second["pid"] != first["pid"] and again["pid"] == first["pid"]


@pytest.fixture(scope="module")
def http_holder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    port_file = tmp_path_factory.mktemp("holder") / "port"
    with port_file_server([sys.executable, HOLDER, "--port-file", str(port_file)], port_file) as port:
        yield port


async def test_an_http_downstream_sees_each_user_s_own_header(tmp_path: Path, http_holder: int) -> None:
    upstream = {
        "transport": "http",
        "url": f"http://127.0.0.1:{http_holder}/mcp",
        "headers": {"Authorization": "Bearer ${user:UPSTREAM}"},
    }
    config = team(tmp_path, {"h": upstream})
    async with http_gateway(config) as base:
        alice = await whoami(base, "alice", **{"x-gateway-secret-upstream": "alice-upstream"})
        bob = await whoami(base, "bob", **{"x-gateway-secret-upstream": "bob-upstream"})
    assert alice["holds_sha256"] == sha("Bearer alice-upstream")
    assert bob["holds_sha256"] == sha("Bearer bob-upstream")


async def test_the_cap_stops_the_least_recently_used_process_and_idle_ones_stop_alone(tmp_path: Path) -> None:
    servers = {
        "h": holder(env={"USER_TOKEN": "${user:USER_TOKEN}"}, pool={"max_processes": 2, "idle_s": 600}),
        "i": holder(env={"USER_TOKEN": "${user:USER_TOKEN}"}, pool={"max_processes": 5, "idle_s": 0.5}),
    }
    config = team(tmp_path, servers, secrets={"sources": ["header"]})

    def secret(name: str) -> dict[str, str]:
        return {"x-gateway-secret-user-token": f"{name}-s"}

    async with http_gateway(config) as base:
        alice = await whoami(base, "alice", **secret("alice"))
        bob = await whoami(base, "bob", **secret("bob"))
        await whoami(base, "alice", **secret("alice"))  # alice used last: bob's process is the one to go
        carol = await whoami(base, "carol", **secret("carol"))
        await wait_for(lambda: not pid_alive(bob["pid"]), what="bob's process stopped for carol's")
        assert pid_alive(alice["pid"]) and pid_alive(carol["pid"])
        idle = await whoami(base, "dave", "i.whoami", **secret("dave"))
        await wait_for(lambda: not pid_alive(idle["pid"]), what="dave's idle process stopped")
        again = await whoami(base, "dave", "i.whoami", **secret("dave"))
    assert again["pid"] != idle["pid"] and again["holds_sha256"] == sha("dave-s")
    assert not pid_alive(alice["pid"]) and not pid_alive(carol["pid"])  # none left once the gateway stops


async def test_when_every_process_is_busy_a_new_user_is_told_to_retry(tmp_path: Path) -> None:
    events = tmp_path / "events.txt"
    busy = kitchen("k", events=events, env={"X": "${user:X}"}, pool={"max_processes": 1})
    config = team(tmp_path, {"k": busy}, secrets={"sources": ["header"]})
    async with http_gateway(config) as base:
        async with (
            anyio.create_task_group() as tg,
            http_client(base, headers=bearer("alice", **{"x-gateway-secret-x": "a"})) as alice,
        ):
            tg.start_soon(alice.call_tool, "k.hang", {})
            await wait_for(lambda: events.exists() and "call hang" in events.read_text(), what="alice's call in flight")
            async with http_client(base, headers=bearer("bob", **{"x-gateway-secret-x": "b"})) as bob:
                refused = await bob.call_tool("k.echo", {"text": "hi"})
            tg.cancel_scope.cancel()
    assert refused.is_error and "1 per-user processes (pool.max_processes)" in text_of(refused)


async def test_on_stdio_the_os_user_s_environment_fills_the_secret(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"h": holder(env={"USER_TOKEN": "${user:MY_TOKEN}"})})
    async with Client(gateway_params(config, env={"MY_TOKEN": "mine"})) as client:
        result = await client.call_tool("h.whoami", {})
        listed = [t.name for t in (await client.list_tools()).tools]
    assert isinstance(result.content[0], types.TextContent)
    assert json.loads(text_of(result))["holds_sha256"] == sha("mine") and "h.wipe" in listed


async def test_a_user_s_crashed_process_is_restarted_and_the_next_call_succeeds(tmp_path: Path) -> None:
    config = team(tmp_path, {"k": kitchen("k", env={"X": "${user:X}"})}, secrets={"sources": ["header"]})
    headers = bearer("alice", **{"x-gateway-secret-x": "a"})
    async with http_gateway(config) as base, http_client(base, headers=headers) as alice:
        before = int(text_of(await alice.call_tool("k.pid", {})))
        crashed = await alice.call_tool("k.crash", {})
        after = int(text_of(await alice.call_tool("k.pid", {})))
    assert crashed.is_error and after != before and not pid_alive(before)


def token_holders() -> Pool:
    """A pool `h` of per-user processes, each given its user's `USER_TOKEN` from a request header."""

    async def updated(*_: object) -> None:
        return None

    config = TypeAdapter(ServerConfig).validate_python(holder(env={"USER_TOKEN": "${user:USER_TOKEN}"}))
    relay = Relay(logger_name=lambda server, name: server)
    pool = Servers(
        relay,
        secrets.from_config(SecretsConfig(sources=["header"])),
        lambda: 1 << 20,
        lambda s, k, a=None: None,
        updated,
    )("h", config)
    assert isinstance(pool, Pool)
    return pool


async def test_two_identities_with_one_display_name_get_processes_named_apart() -> None:
    """What a process asks and logs is routed by its name: two JWT subjects both called "alice" must not share one."""

    pool = token_holders()
    first, second = (Identity("alice", "jwt", subject, "https://idp.test") for subject in ("s-1", "s-2"))
    async with pool.running():
        with anyio.fail_after(60):
            async with pool.lease(first, {"USER_TOKEN": "a"}) as one, pool.lease(second, {"USER_TOKEN": "b"}) as two:
                names = (one.name, two.name)
    assert names[0] != names[1] and all(name.startswith("h@alice~") for name in names)


async def test_concurrent_first_calls_of_one_person_start_one_process_and_later_calls_reuse_it_while_up() -> None:
    """The lease takes the pool's lock only to start a member: calls to one that is up go without it."""

    pool = token_holders()
    alice = Identity("alice", "jwt", "s-1", "https://idp.test")
    pids: list[int] = []

    async def call() -> None:
        async with pool.lease(alice, {"USER_TOKEN": "a"}) as downstream:
            result = await downstream.call_tool("whoami", {})
        assert isinstance(result, types.CallToolResult)
        pids.append(json.loads(text_of(result))["pid"])

    async with pool.running():
        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                for _ in range(10):
                    tg.start_soon(call)
            for _ in range(10):
                await call()
    assert len(pids) == 20 and len(set(pids)) == 1 and pool.started == 1
