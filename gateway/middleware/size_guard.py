"""Size guard: oversized tool arguments are refused with guidance; oversized results are spilled and previewed.

A result is cut once, by the gateway. Claude Code persists a tool result over its own limit to a file and shows
the model a preview (100,000 characters unless the tool's `_meta["anthropic/maxResultSizeChars"]` says more):
a gateway preview that passed it (Think's answers may be 200,000 bytes, `limits.tools` may raise any tool) was
cut a second time, and the gateway's `[gateway]` notice at its end went into the file with it. Every tool
listed to such a client (`TELLS_LIMIT`, by `clientInfo.name`) therefore carries the gateway's own inline limit
for it plus the hint budget: what the gateway lets through inline, the client keeps inline. Cursor writes long
results to files too but reads no such hint; the gateway's default inline limit (20,000 bytes) keeps its
previews short.
"""

import logging
from collections.abc import Awaitable, Callable
from fnmatch import fnmatchcase
from typing import Any, Literal, Self

import mcp.types as types
from pydantic_core import to_json

from gateway import telemetry
from gateway.config import GatewayConfig
from gateway.errors import RequestRejected
from gateway.middleware.exposure.rules import STATE_KEY, TELLS_LIMIT, View
from gateway.middleware.limits import SizeLimits
from gateway.pipeline import Call, Middleware
from gateway.results import Hint, cut, text_view, utf8_len
from gateway.session import Session
from gateway.store.base import Outputs, StoreUnavailable
from gateway.store.outputs import MAX_PAGE_BYTES
from gateway.telemetry.repeats import Repeating

logger = logging.getLogger(__name__)
repeats = Repeating(logger)

PreviewStrategy = Literal["head", "tail", "both"]
OUTPUT_URI = "gateway://outputs/{id}"
MAX_RESULT_SIZE = "anthropic/maxResultSizeChars"


def preview(text: str, budget: int, strategy: PreviewStrategy) -> tuple[str, int]:
    """The seed's marker lines around the kept part, and how many bytes of the head it shows.

    Byte counts refer to the UTF-8 text and are the bytes actually shown (cutting on character
    boundaries can keep up to 3 bytes less than asked). The second value is where reading on starts.
    A preview is never longer than the text it shortens: a text that short is shown as it is.
    """
    total = utf8_len(text)  # never a whole second copy of a 100 MB text
    shown, head = _marked(text, total, budget, strategy)
    return (text, total) if utf8_len(shown) >= total else (shown, head)


def _marked(text: str, total: int, budget: int, strategy: PreviewStrategy) -> tuple[str, int]:
    if strategy == "head":
        kept = cut(text, budget)
        n = utf8_len(kept)
        shown = f"--- Output (showing first {n} bytes of {total}) ---\n{kept}\n--- [{total - n} bytes truncated] ---"
        return shown, n
    if strategy == "tail":
        kept = cut(text, budget, from_end=True)
        n = utf8_len(kept)
        return f"--- [{total - n} bytes truncated] ---\n{kept}\n--- Output (showing last {n} bytes of {total}) ---", 0
    head, tail = cut(text, budget // 2), cut(text, budget // 2, from_end=True)
    h, t = utf8_len(head), utf8_len(tail)
    # The seed's single "first/last N" only when it is true for both ends.
    sides = f"first/last {h}" if h == t else f"first {h}/last {t}"
    return (
        f"--- Output (showing {sides} bytes of {total}) ---\n{head}\n--- [{total - h - t} bytes truncated] ---\n{tail}",
        h,
    )


class SizeGuard(Middleware):
    """Last in the chain, so it measures every result other middlewares produced (hints are not counted)."""

    name = "size_guard"
    methods = frozenset({"tools/call", "tools/list"})

    def __init__(
        self,
        store: Outputs,
        limits: SizeLimits | None = None,
        *,
        strategy: PreviewStrategy = "both",
        hint_chars: int = 2048,
        separator: str = ".",
        on_spill: Callable[[Session], Awaitable[bool]] | None = None,
    ) -> None:
        self.store = store
        self.on_spill = on_spill
        """Tells exposure a session had a result spilled (read_output joins its list); answers whether the client's
        list already held read_output. None (a chain without exposure): the notice names both ways to read."""
        self.limits = limits or SizeLimits()
        self.strategy = strategy
        self.hint_chars = hint_chars
        """Room for the gateway's hints beside an inline result (`limits.hint_budget_chars`)."""
        self.separator = separator
        """`namespace.separator`: the limits' globs name tools with it."""

    @classmethod
    def from_config(
        cls,
        config: GatewayConfig,
        *,
        outputs: Outputs,
        limits: SizeLimits,
        on_spill: Callable[[Session], Awaitable[bool]] | None = None,
    ) -> Self:
        strategy, hint_chars = config.limits.truncation_strategy, config.limits.hint_budget_chars
        separator = config.namespace.separator
        return cls(outputs, limits, strategy=strategy, hint_chars=hint_chars, separator=separator, on_spill=on_spill)

    async def on_request(self, call: Call) -> None:
        if call.method != "tools/call":
            return
        arguments = call.params.get("arguments")
        if not arguments:
            return
        try:
            size = len(to_json(arguments))
        except ValueError:
            # Nested deeper than pydantic serializes: the size is unknown here, and whether the call can go
            # on is the forward's business (an in-process server takes it as is; Think truncates it).
            logger.debug("size_guard: cannot measure the arguments of %s", call.name)
            return
        call.request_bytes = size
        limit = self.limits.limit(call, "max_request_bytes")
        if size <= limit:
            return
        telemetry.event("gateway.size_guard.rejected", **{"request.bytes": size, "limit.bytes": limit})
        repeats.warning("size_guard: rejected %s arguments of %d bytes (limit %d)", call.name, size, limit)
        raise RequestRejected(
            f"The arguments of {call.params.get('name')!r} are {size:,} bytes, over the gateway's limit of "
            f"{limit:,} bytes (limits.max_request_bytes); nothing was sent to the server. Send less instead: "
            "a file path or URL the tool can read, a summary, or the data split over several smaller calls."
        )

    async def on_response(self, call: Call) -> None:
        if call.method == "tools/list":
            self._tell_limits(call)
            return
        result, size = call.tool_result, call.response_bytes()
        if result is None or size is None or not self.limits.spills(call):
            return
        limit = self.limits.limit(call, "max_inline_bytes")
        text = text_view(result)
        budget = max(limit - 400, 200)  # room for the marker lines and the link
        shown, next_offset = preview(text, budget, self.strategy)
        name = call.name
        try:
            # The store compresses in a worker thread: gzip-writing 100 MB must not stall every other call.
            whole = result.model_dump(mode="json", by_alias=True, exclude_none=True)  # shares the strings
            spilled = await self.store.spill(call.session.identity.owner, whole, text)  # the caller's alone
        except Exception as exc:  # noqa: BLE001 -- whatever failed, the guard holds: the preview, never the whole
            self._unkept(call, result, shown, size, exc)
            return
        uri = OUTPUT_URI.format(id=spilled.id)
        link = types.ResourceLink(
            uri=uri,
            name=f"output-{spilled.id}",
            mime_type="text/plain",
            size=spilled.text_bytes,
            description=f"Full output of {name} ({spilled.text_bytes:,} bytes of text)",
        )
        call.result = self._replace(call, result, [types.TextContent(text=shown), link])
        call.spilled = spilled.id
        listed = await self.on_spill(call.session) if self.on_spill is not None else False
        arguments = f'{{"id": "{spilled.id}", "offset": {next_offset}, "length": {MAX_PAGE_BYTES}}}'
        # A client that calls only the tools it listed, and listed before read_output joined (or never re-lists on
        # list_changed), reaches it through call_tool: the notice gives that call whole.
        through = (
            ""
            if listed
            else " (if your tool list lacks it: gateway.call_tool "
            f'{{"name": "gateway.read_output", "arguments": {arguments}}})'
        )
        call.hints.append(
            Hint(
                "truncated",
                f"This output was {size:,} bytes, over the {limit:,}-byte inline limit; the preview "
                f"above is cut. The whole text ({spilled.text_bytes:,} bytes) is stored as {spilled.id} for "
                f"{self.store.ttl_s / 3600:g} h. Read more with gateway.read_output {arguments}{through} "
                f"or the resource {uri}; read only what you need.",
            )
        )
        telemetry.event(
            "gateway.size_guard.spilled",
            **{
                "response.bytes": size,
                "limit.bytes": limit,
                "preview.bytes": len(shown.encode()),
                "output.id": spilled.id,
            },
        )
        logger.info("size_guard: spilled %d bytes from %s as %s (limit %d)", size, name, spilled.id, limit)

    def _tell_limits(self, call: Call) -> None:
        """A listing for a client that persists big results itself: each tool says what the gateway keeps inline."""
        listing, client = call.result, call.session.client
        if not isinstance(listing, types.ListToolsResult) or not any(fnmatchcase(client or "", g) for g in TELLS_LIMIT):
            return
        view = call.session.data.get(STATE_KEY)
        if isinstance(view, View) and view.rule.separator != self.separator:
            # Renamed for this client: its names match none of the limits' globs, so each tool is told the widest
            # limit in force (a bound the gateway's own cut never passes), not a default it may exceed.
            widest = self.limits.widest() + self.hint_chars
            told = {tool.name: widest for tool in listing.tools}
        else:
            told = {tool.name: self.limits.of(tool.name) + self.hint_chars for tool in listing.tools}
        tools = [
            tool.model_copy(update={"meta": {**(tool.meta or {}), MAX_RESULT_SIZE: told[tool.name]}})
            for tool in listing.tools
        ]
        call.result = listing.model_copy(update={"tools": tools})

    def _unkept(self, call: Call, result: types.CallToolResult, shown: str, size: int, exc: Exception) -> None:
        if isinstance(exc, (OSError, StoreUnavailable)):
            why = exc.strerror if isinstance(exc, OSError) else "the store is unavailable"
            repeats.log(logging.ERROR, "size_guard: could not spill %d bytes from %s: %s", size, call.name, exc)
        else:  # a store that breaks its contract: a bug, with its traceback
            why = "the store failed"
            repeats.log(
                logging.ERROR, "size_guard: the store failed on %d bytes from %s", size, call.name, exc_info=True
            )
        call.hints.append(
            Hint(
                "truncated",
                f"The full output ({size:,} bytes) could not be kept ({why}); only this "
                "preview exists. Call the tool again with narrower arguments to see other parts.",
            )
        )
        call.result = self._replace(call, result, [types.TextContent(text=shown)])

    def _replace(self, call: Call, result: types.CallToolResult, content: list[Any]) -> types.CallToolResult:
        # A tool with an output_schema must return schema-valid structured content; a preview is not, so
        # the client gets an error result (clients do not validate those). Others just lose the duplicate.
        is_error = bool(result.is_error) or call.has_output_schema
        return types.CallToolResult(content=content, is_error=is_error, meta=result.meta)
