"""What the page shows of one recorded call (`middleware/publish.py`): what the model received block by block, as
the chain rendered it, the gateway's own blocks marked with their kind; what was sent, or why nothing was; the
arguments of a caller who chose to see them, redacted, and only while they still choose it."""

from typing import Any

import mcp.types as types
import pytest

from gateway.errors import UnknownName
from gateway.middleware.publish import Publisher, entry, received
from gateway.middleware.record import Recorded, Recorder
from gateway.pipeline import Call
from gateway.results import Hint, render_hints, text_result
from gateway.session import ANONYMOUS, Identity, Session
from gateway.store.local.calls import LocalCallLog


def recorded(**fields: Any) -> Recorded:
    call: dict[str, Any] = {
        "identity": ANONYMOUS,
        "tool": "k.echo",
        "server": "k",
        "error": None,
        "refused_by": None,
        "seconds": 0.01,
        "ended": 0.0,
        "request_bytes": 12,
        "response_bytes": None,
        "spilled": None,
        "hints": [],
        "result": None,
        "downstream": None,
        "trace": None,
        "client": "claude-code",
        "sent": "echo",
        "arguments": None,
        "held": 0,
    }
    return Recorded(**{**call, **fields})


def test_the_model_received_the_servers_blocks_then_the_gateways_each_marked_with_its_kind() -> None:
    server = types.CallToolResult(content=[types.TextContent(type="text", text="hello")])
    hints = [Hint("steering", "Next: k.more shows the rest.")]
    blocks, size = received(recorded(result=render_hints(server, hints, 2048), downstream=server, hints=hints))
    assert [b["added"] for b in blocks] == [None, "steering"]
    assert blocks[0]["text"] == "hello" and "Next: k.more shows the rest." in blocks[1]["text"]
    assert size is not None and size > len("hello")


def test_a_call_answered_by_the_gateway_says_nothing_was_sent_and_shows_its_error_as_the_model_read_it() -> None:
    refusal = UnknownName("tool", "k.nope", ["k.echo"])
    shown = types.CallToolResult(content=[types.TextContent(type="text", text=str(refusal))], is_error=True)
    page = entry(recorded(error=refusal, sent=None, server=None, result=shown), "r1", 0.0)
    assert page["outcome"] == "refused" and page["sent"].startswith("Not sent")
    assert page["before"] is None and page["after"] == [{"text": str(refusal), "added": None}]


def test_the_arguments_kept_are_shown_with_the_configured_keys_redacted() -> None:
    arguments = {"text": "hi", "Auth": {"Bearer": "abc"}}
    page = entry(recorded(arguments=arguments), "r1", 0.0, redact=["bearer"])
    assert page["arguments"] is not None and '"Bearer": "[redacted]"' in page["arguments"]
    assert '"text": "hi"' in page["arguments"] and "abc" not in page["arguments"]
    assert entry(recorded(), "r2", 0.0)["arguments"] is None  # none kept: none shown


@pytest.mark.anyio
async def test_arguments_are_published_only_while_their_caller_still_chooses_to_keep_them() -> None:
    alice = Identity("alice", "static", "alice")
    recorder, log = Recorder(), LocalCallLog()
    publisher = Publisher(recorder, log, background=False, redact=lambda: ["token"])
    await publisher.keeping.choose(alice.owner, True)
    assert recorder.arguments_of == frozenset({alice.owner})

    async def call(text: str) -> None:
        made = Call(Session("s", alice), "tools/call", {"name": "k.echo", "arguments": {"text": text, "token": "t0k"}})
        made.result = text_result(text)
        await recorder.on_response(made)

    await call("kept")
    await publisher.flush()
    await call("recorded, then she chose otherwise")
    await log.keep_arguments(alice.owner, False)  # as another replica writes it: this recorder still holds the call
    await publisher.flush()
    newest, oldest = await log.recent(frozenset({alice.owner}))
    assert oldest["arguments"] is not None and '"token": "[redacted]"' in oldest["arguments"]
    assert newest["arguments"] is None and recorder.arguments_of == frozenset()
