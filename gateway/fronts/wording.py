"""The gateway's own words in the names a session sees: hints, errors, and the results of its and Think's tools
name tools as this session's exposure rule spells them (a client rule may set another separator)."""

import mcp.types as types

from gateway.middleware.exposure.listed import OWN_SERVERS
from gateway.pipeline import Call
from gateway.results import Hint
from gateway.routing.rename import Names


def in_session_names(names: Names, call: Call, result: types.CallToolResult) -> tuple[types.CallToolResult, list[Hint]]:
    """`result` and the call's hints in `names`: a downstream's own result is left as its server wrote it."""
    if names.identity:
        return result, call.hints
    hints = [Hint(h.kind, names.text(h.text)) for h in call.hints]
    if call.error is not None or call.server in OWN_SERVERS:
        content = [
            b.model_copy(update={"text": names.text(b.text)}) if isinstance(b, types.TextContent) else b
            for b in result.content
        ]
        result = result.model_copy(
            update={"content": content, "structured_content": names.deep(result.structured_content)}
        )
    return result, hints
