"""The render stage finishes the answer inside the chain: the observers after it (the recorder the page reads, the
audit) see exactly what the client received."""

from pathlib import Path

import pytest

from gateway.app.gateway import Gateway
from gateway.config import load_config
from tests.harness import connected, hints_of, text_of, write_config
from tests.servers.kitchen import Kitchen

pytestmark = pytest.mark.anyio


async def test_the_recorder_and_the_audit_see_the_answer_the_client_received(tmp_path: Path) -> None:
    # Before: hints, relay notices and session names were added by the front after the chain, so the page showed
    # a result without them (and rendered the hints again its own way) and the audit measured another size.
    audit = tmp_path / "audit.jsonl"
    rules = {"clients": [{"client": "*", "separator": "_"}]}
    config = write_config(tmp_path, {}, exposure=rules, audit={"path": str(audit)})
    gateway = Gateway(load_config(config), in_process={"k": lambda: Kitchen("k", None, 0, []).server}, record=True)
    async with connected(gateway) as (_, client):
        received = await client.call_tool("k_nope", {})
    assert gateway.recorder is not None
    [recorded] = gateway.recorder.drain()
    assert recorded.result is not None and recorded.result.is_error and received.is_error
    assert text_of(recorded.result) == text_of(received)
    assert hints_of(recorded.result) == hints_of(received) != []
    assert "k_" in text_of(received) and "k." not in text_of(received)  # the closest names, in the session's names
    line = audit.read_text(encoding="utf-8").splitlines()[-1]
    assert f'"response_bytes":{recorded.response_bytes}' in line
