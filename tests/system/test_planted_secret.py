"""A planted secret and planted tokens never reach the gateway's logs (at DEBUG), its spans or its audit log,
through successful calls, refusals, missing secrets and wrong tokens alike."""

import os
import subprocess
import sys
from contextlib import suppress
from pathlib import Path

import anyio
import httpx2
import pytest

from tests.harness import PYTHON, ROOT, free_port, http_client, stop, wait_for, write_config
from tests.idp import AUDIENCE, ISSUER, IdentityProvider, serving

pytestmark = pytest.mark.anyio

PLANTED = {
    "token": "PLANTED-static-token-5e1f",
    "wrong": "PLANTED-wrong-token-77aa",
    "dir": "PLANTED-dir-secret-9b3c",
    "header": "PLANTED-header-secret-04d2",
}
HOLDER = {
    "transport": "stdio",
    "command": sys.executable,
    "args": [str(ROOT / "tests" / "servers" / "holder.py")],
    "env": {"USER_TOKEN": "${user:USER_TOKEN}"},
}


def secrets_dir(root: Path) -> Path:
    (root / "alice").mkdir(parents=True, mode=0o700)
    root.chmod(0o700)
    (root / "alice" / "USER_TOKEN").write_text(PLANTED["dir"])
    (root / "alice" / "USER_TOKEN").chmod(0o600)
    return root


async def listening(base: str) -> None:
    """Until /healthz answers (uvicorn binds after the gateway logs that it serves)."""
    with anyio.fail_after(30):
        async with httpx2.AsyncClient(timeout=2) as http:
            while True:
                with suppress(httpx2.HTTPError):
                    if (await http.get(f"{base}/healthz")).status_code == 200:
                        return
                await anyio.sleep(0.05)  # another process's socket offers no event to wait on


async def test_no_planted_secret_or_token_reaches_logs_spans_or_audit(tmp_path: Path) -> None:
    with serving(IdentityProvider()) as idp:
        jwt = idp.token("bob", scope="mcp")
        auth = {
            "resource_url": AUDIENCE,
            "jwt": {"issuer": ISSUER, "jwks_url": idp.jwks_url},
            "tokens": [{"name": "alice", "token": PLANTED["token"]}],
        }
        config = write_config(
            tmp_path,
            {"h": HOLDER},
            auth=auth,
            secrets={"dir": str(secrets_dir(tmp_path / "secrets"))},
            audit={"path": "audit.jsonl"},
            policy={"rules": [{"name": "no-wipe", "deny": ["h.wipe"]}]},
        )
        base = f"http://127.0.0.1:{free_port()}"
        argv = [PYTHON, "-m", "gateway", "serve", "--config", str(config), "--http", base[7:], "--log-level", "DEBUG"]
        env = {**os.environ, "PYTHONPATH": str(ROOT), "OTEL_TRACES_EXPORTER": "console"}
        log = tmp_path / "gateway.log"
        with log.open("wb") as out:
            process = await anyio.open_process(argv, stdout=out, stderr=subprocess.STDOUT, cwd=str(ROOT), env=env)
            try:
                await wait_for(lambda: b"serving http" in log.read_bytes(), what="the gateway serving")
                await listening(base)
                async with http_client(base, headers={"authorization": f"Bearer {PLANTED['token']}"}) as alice:
                    assert not (await alice.call_tool("h.whoami", {})).is_error
                    assert (await alice.call_tool("h.wipe", {})).is_error  # refused by policy
                headers = {"authorization": f"Bearer {jwt}", "x-gateway-secret-user-token": PLANTED["header"]}
                async with http_client(base, headers=headers, mode="legacy") as bob:
                    assert not (await bob.call_tool("h.whoami", {})).is_error
                async with http_client(base, headers={"authorization": f"Bearer {jwt}"}) as no_secret:
                    assert (await no_secret.call_tool("h.note", {})).is_error  # the header is missing this time
                async with httpx2.AsyncClient() as http:
                    wrong = await http.post(f"{base}/mcp", headers={"authorization": f"Bearer {PLANTED['wrong']}"})
                    assert wrong.status_code == 401
            finally:
                await stop(process)
    written = {"logs and spans": log.read_text(), "audit": (tmp_path / "audit.jsonl").read_text()}
    assert '"name": "MCP send tools/call whoami"' in written["logs and spans"]  # the spans are there
    assert " DEBUG " in written["logs and spans"]
    assert written["audit"].count("\n") == 4
    for where, text in written.items():
        for what, value in {**PLANTED, "jwt": jwt, "jwt signature": jwt.rsplit(".", 1)[1]}.items():
            assert value not in text, f"the {what} appears in the {where}"
