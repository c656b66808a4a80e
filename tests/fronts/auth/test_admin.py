"""Who may change a running gateway over HTTP (`POST /reload`): members of `auth.admin_groups`; nobody when that
key is unset; without auth, callers on loopback only (fronts/auth/admin.py)."""

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from starlette.requests import Request

from gateway.fronts.auth.admin import Admins
from gateway.fronts.auth.local import Locality
from tests.fronts.auth.test_asgi import INITIALIZE, LEGACY
from tests.harness import ROOT, http_gateway, kitchen, write_config

pytestmark = pytest.mark.anyio

TOKENS = {"alice": "alice-token-0123456789", "bob": "bob-token-0123456789ab", "carol": "carol-token-0123456789"}
GROUPS = {"alice": ["ops", "dev"], "bob": ["dev"], "carol": []}


def team(tmp_path: Path, **auth: Any) -> Path:
    tokens = [{"name": n, "token": t, "groups": GROUPS[n]} for n, t in TOKENS.items()]
    return write_config(tmp_path, {"k": kitchen("k")}, auth={"tokens": tokens, **auth})


async def reload_as(http: httpx2.AsyncClient, who: str | None, **headers: str) -> httpx2.Response:
    bearer = {} if who is None else {"authorization": f"Bearer {TOKENS[who]}"}
    return await http.post("/reload", headers=bearer | headers)


async def test_only_members_of_the_admin_groups_may_reload(tmp_path: Path) -> None:
    async with http_gateway(team(tmp_path, admin_groups=["ops"])) as base:
        async with httpx2.AsyncClient(base_url=base, timeout=60) as http:
            admin, developer, groupless, nobody = [await reload_as(http, w) for w in ("alice", "bob", "carol", None)]
        cli = [sys.executable, "-m", "gateway", "reload", "--url", base]
        env = {**os.environ, "PYTHONPATH": str(ROOT), "GATEWAY_TOKEN": TOKENS["bob"]}
        refused_cli = await anyio.run_process(cli, cwd=ROOT, env=env, check=False)
    assert admin.status_code == 200 and admin.json()["ok"] is True
    assert developer.status_code == 403 and developer.json()["ok"] is False
    assert developer.json()["error"] == (
        "POST /reload is for administrators: 'bob' is in groups dev, none of auth.admin_groups (groups ops). "
        "Ask an administrator, or add one of its groups there."
    )
    assert groupless.status_code == 403 and "'carol' is in no groups" in groupless.json()["error"]
    assert nobody.status_code == 401  # no token: the auth middleware's challenge, before any route
    assert refused_cli.returncode == 1 and b"auth.admin_groups" in refused_cli.stdout


async def test_without_admin_groups_no_authenticated_identity_may_reload(tmp_path: Path) -> None:
    async with http_gateway(team(tmp_path)) as base, httpx2.AsyncClient(base_url=base, timeout=60) as http:
        refused = await reload_as(http, "alice")
        served = await http.post(
            "/mcp", json=INITIALIZE, headers=LEGACY | {"authorization": f"Bearer {TOKENS['alice']}"}
        )
    assert refused.status_code == 403
    assert "set auth.admin_groups to the groups allowed to ('alice' is in groups dev, ops)" in refused.json()["error"]
    assert served.status_code == 200  # using the gateway is still hers


async def test_without_auth_a_loopback_caller_may_reload_but_not_a_forwarded_request(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"k": kitchen("k")})
    async with http_gateway(config) as base, httpx2.AsyncClient(base_url=base, timeout=60) as http:
        local = await reload_as(http, None)
        forwarded = await reload_as(http, None, **{"x-forwarded-for": "203.0.113.9"})
    assert local.status_code == 200 and local.json()["ok"] is True
    assert forwarded.status_code == 403  # refused before the route, by the rule the page and /metrics follow too
    message = forwarded.json()["error"]["message"]
    assert message.startswith("POST /reload refused for a request a proxy forwarded (x-forwarded-for header)")
    assert "Configure auth.tokens or auth.jwt" in message


@pytest.mark.parametrize(
    ("client", "headers", "allowed"),
    [
        (("127.0.0.1", 50000), [], True),
        (("::1", 50000), [], True),
        (None, [], True),  # a Unix socket
        (("10.1.2.3", 50000), [], False),
        (("127.0.0.1", 50000), [(b"x-balancer-client", b"198.51.100.7:4242")], False),
        (("127.0.0.1", 50000), [(b"forwarded", b"for=198.51.100.7")], False),
    ],
)
def test_without_auth_only_a_local_peer_is_the_operator(
    client: tuple[str, int] | None, headers: list[tuple[bytes, bytes]], allowed: bool
) -> None:
    scope = {"type": "http", "method": "POST", "path": "/reload", "headers": headers, "client": client}
    locality = Locality(client_header="X-Balancer-Client")
    why = Admins(frozenset({"ops"}), locality).refusal(Request(scope), "POST /reload")
    assert (why is None) is allowed, why
