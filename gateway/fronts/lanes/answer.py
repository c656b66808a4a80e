"""What both fronts' lanes answer to a `tools/call`: the call through the front's pipeline, shaped for the wire as
the SDK's server runner shapes it (`ServerRunner._serialize`: the per-version sieve; in the 2026 era
`resultType` and the gateway's `serverInfo` stamp), inside the SDK's SERVER span."""

import logging
from typing import Any, NamedTuple

from mcp.server.runner import modern_error_data
from mcp_types import SERVER_INFO_META_KEY, ErrorData
from mcp_types import methods as spec
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from opentelemetry.trace import StatusCode

from adapters import jsonwire
from gateway import telemetry
from gateway.downstreams.relay import Relay
from gateway.errors import jsonrpc_error
from gateway.fronts.auth.callers import Caller
from gateway.fronts.server import Front

logger = logging.getLogger(__name__)


class Answer(NamedTuple):
    """A lane's JSON-RPC response to a `tools/call`."""

    message: dict[str, Any]
    error: ErrorData | None
    """The error it carries (None for a result)."""
    small: bool = False
    """Its strings are known to add up to at most `jsonwire.STREAM_FROM` characters: a plain text result, whose
    blocks were counted as they were checked, so the writer encodes it whole without walking it again (a walk cost
    twice the encoding of a small answer). False: the writer counts."""


ENVELOPE_CHARS = 4096
"""More than the strings a plain answer holds beside its text and id: "2.0", each block's "text", "complete" and
the gateway's `serverInfo` stamp (its name and version)."""


async def answer_tool_call(
    front: Front, caller: Caller, request_id: str | int, params: dict[str, Any], version: str
) -> Answer:
    """The JSON-RPC response to a validated `tools/call`.

    A bug below becomes INTERNAL_ERROR for this call, as at the SDK's boundary, never a dropped connection.
    """
    name: str = params["name"]
    meta = params.get("_meta")
    with telemetry.server_span("tools/call", name, request_id, version, meta if isinstance(meta, dict) else {}) as span:
        try:
            connection = None if version in MODERN_PROTOCOL_VERSIONS else front.relay.connection(caller.key)
            fields = {"name": name, "arguments": params.get("arguments")}
            call = front.door.open(
                caller,
                "tools/call",
                fields,
                version=version,
                meta=meta if isinstance(meta, dict) else None,
                connection=connection,
            )
            result = await front.call_tool(call)
        except Exception as exc:  # the SDK's boundary
            logger.exception("tools/call %s failed", name)
            error = modern_error_data(exc)
            span.set_status(StatusCode.ERROR, error.message)
            body = jsonrpc_error(request_id, error.code, error.message, error.data)
            return Answer(body, error)
        telemetry.tool_outcome(span, bool(getattr(result, "is_error", False)))  # or input-required
        dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        del result
        chars = _plain(dumped)
        dumped = sieved(version, dumped, chars is not None)
        if version in MODERN_PROTOCOL_VERSIONS:
            if dumped.get("resultType") is None:
                dumped["resultType"] = "complete"
            dumped["_meta"] = {**(dumped.get("_meta") or {}), SERVER_INFO_META_KEY: front.server_info}
        small = chars is not None and chars + len(str(request_id)) + ENVELOPE_CHARS <= jsonwire.STREAM_FROM
        return Answer({"jsonrpc": "2.0", "id": request_id, "result": dumped}, None, small)


def sieved(version: str, dumped: dict[str, Any], plain: bool | None = None) -> dict[str, Any]:
    """`dumped` as `version`'s schema has it (the SDK's per-version sieve, `serialize_server_result`). The plainest
    result, text blocks and `isError`, reads the same in every version (the 2026 era adds `resultType`): it is
    answered without validating it again (it was validated when the downstream's answer was read) and dumping it
    again, which cost more than the rest of the answer; anything else passes the SDK's sieve. `plain`: whether
    `dumped` is such a result, if the caller checked (`_plain`; None: checked here)."""
    modern = version in MODERN_PROTOCOL_VERSIONS
    known = modern or version in HANDSHAKE_PROTOCOL_VERSIONS
    if plain is None:
        plain = _plain(dumped) is not None
    if not known or not plain or (modern and "resultType" not in dumped):
        return spec.serialize_server_result("tools/call", version, dumped)  # which names what it refuses
    if not modern:
        dumped.pop("resultType", None)  # the 2026 era's
    return dumped


_PLAIN_KEYS = frozenset({"content", "isError", "resultType"})


def _plain(dumped: dict[str, Any]) -> int | None:
    """The characters of its text blocks' text if `dumped` holds only text blocks without annotations or `_meta`,
    `isError`, and a `resultType` that is "complete"; None otherwise."""
    if not _PLAIN_KEYS.issuperset(dumped) or dumped.get("resultType", "complete") != "complete":
        return None
    if not isinstance(dumped.get("isError", False), bool):
        return None
    content = dumped.get("content")
    if not isinstance(content, list):
        return None
    chars = 0
    for block in content:  # a loop, not all() over a generator: every lane answer passes here
        if not isinstance(block, dict) or len(block) != 2 or block.get("type") != "text":
            return None
        text = block.get("text")
        if not isinstance(text, str):
            return None
        chars += len(text)
    return chars


def may_be_asked(relay: Relay, key: str) -> bool:
    """Whether a downstream could ask this handshake-era client something (it declared sampling, elicitation or
    roots): its calls then take the SDK path, whose response stream carries those requests."""
    connection = relay.connection(key)
    if connection is None:  # `initialized` not seen yet (a concurrent POST): assume it may be asked
        return True
    caps = connection.client_capabilities
    return caps is not None and any((caps.sampling, caps.elicitation, caps.roots))
