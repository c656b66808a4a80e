"""What the page shows of one recorded call (`middleware/publish.py`): what the model received block by block, as
the chain rendered it, the gateway's own blocks marked with their kind; what was sent, or why nothing was."""

from typing import Any

import mcp.types as types

from gateway.errors import UnknownName
from gateway.middleware.publish import entry, received
from gateway.middleware.record import Recorded
from gateway.results import Hint, render_hints
from gateway.session import ANONYMOUS


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
