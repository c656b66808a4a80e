"""The forwards beyond listing and reading: tool calls with their relay, completion, subscriptions, log level. Each
maps the client's exposed names back to the owning server's own before forwarding (DESIGN §15)."""

import logging
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import mcp.types as types
from mcp.types.version import MODERN_PROTOCOL_VERSIONS
from mcp_types import LOG_LEVEL_META_KEY
from pydantic import TypeAdapter

from gateway import sdk
from gateway.downstreams.downstream import Downstream
from gateway.downstreams.pool import Pool
from gateway.downstreams.relay import Relay
from gateway.downstreams.url_asks import url_refusal
from gateway.errors import DownstreamError, DownstreamFailed, RequestRejected
from gateway.inflight import offerable
from gateway.pipeline import Call
from gateway.routing import apps
from gateway.routing.uris import Uris
from gateway.session import OWNER_META_KEY, SESSION_META_KEY, Identity

logger = logging.getLogger(__name__)

R = TypeVar("R", bound=types.Result)
Send = Callable[[dict[str, Any]], Awaitable[R | types.InputRequiredResult]]
"""One try of a forwarded request, given the extra wire params (`_meta`, `inputResponses`, `requestState`)."""

Who = tuple[Identity, Mapping[str, str]]
"""Whom a request serves: its identity and the secrets it carries (they pick a per-user server's process)."""
ROUND_PARAMS = ("inputResponses", "requestState")
"""A 2026-era client's answers to a downstream's input requests, passed on as they came."""
MAX_ROUNDS = 10
"""Input-required rounds the gateway answers for one call before it gives up (the SDK client's default)."""


@dataclass(frozen=True, slots=True)
class Kind(Generic[R]):
    """A request that may come back input-required: how to build it, and what it answers."""

    request: Callable[..., Any]
    params: type[types.RequestParams]
    result: TypeAdapter[R | types.InputRequiredResult]


PROMPT: Kind[types.GetPromptResult] = Kind(
    types.GetPromptRequest, types.GetPromptRequestParams, TypeAdapter(types.GetPromptResult | types.InputRequiredResult)
)
READ: Kind[types.ReadResourceResult] = Kind(
    types.ReadResourceRequest,
    types.ReadResourceRequestParams,
    TypeAdapter(types.ReadResourceResult | types.InputRequiredResult),
)
EMPTY_COMPLETION = types.CompleteResult(completion=types.Completion(values=[], total=0, has_more=False))


@dataclass(frozen=True, slots=True)
class Owners:
    """Resolve exposed names to (server, original); each raises `UnknownName` with the closest known ones."""

    prompt: Callable[[str], tuple[str, str]]
    resource: Callable[[str], tuple[str, str]]


class Features:
    def __init__(
        self,
        downstreams: Mapping[str, Downstream | Pool],
        uris: Uris,
        relay: Relay,
    ) -> None:
        self.downstreams = downstreams
        self.uris = uris
        self.relay = relay

    async def call_tool(
        self, ds: Downstream, name: str, call: Call
    ) -> types.CallToolResult | types.InputRequiredResult:
        """Forward a tool call (with its input rounds relayed, see `relayed`)."""
        arguments = call.params.get("arguments")

        async def send(extra: dict[str, Any]) -> types.CallToolResult | types.InputRequiredResult:
            return await ds.call_tool(name, arguments, call.progress, extra)

        result = await self.relayed(ds, f"tool {name!r}", call, send)
        if isinstance(result, types.InputRequiredResult):
            return result
        return apps.exposed(call.server or ds.name, result, self.uris)  # a per-user process is named for its user

    async def request(
        self, ds: Downstream, what: str, call: Call, kind: Kind[R], fields: dict[str, Any]
    ) -> R | types.InputRequiredResult:
        """`prompts/get` or `resources/read` (`fields`: the params in the server's own names), relayed as tools/call."""

        async def send(extra: dict[str, Any]) -> R | types.InputRequiredResult:
            request = kind.request(params=kind.params.model_validate({**fields, **extra}))
            return await ds.request(request, kind.result)

        return await self.relayed(ds, what, call, send)

    async def relayed(self, ds: Downstream, what: str, call: Call, send: Send[R]) -> R | types.InputRequiredResult:
        """Forward one request of `call` (`send` with the extra wire params of each try) while its client is
        reachable by the relay; a 2026-era downstream's input rounds go back to a 2026-era client in the answer
        (it answers and retries through us, its `inputResponses`/`requestState` passed on), and are answered by
        asking a handshake-era client (its sampling, elicitation, roots requests) round by round."""
        peer = call.peer
        extra: dict[str, Any] = {k: call.params[k] for k in ROUND_PARAMS if k in call.params}
        meta: dict[str, Any] = {}
        if peer is not None and peer.log_level is not None:
            meta[LOG_LEVEL_META_KEY] = peer.log_level
        if ds.protocol_version in MODERN_PROTOCOL_VERSIONS:  # offered only what this client answers
            meta[sdk.OFFER_META_KEY] = offerable(peer)
        if ds.hosted:  # the gateway's own servers keep what a person creates as theirs (DESIGN §16)
            meta[OWNER_META_KEY] = call.session.identity.owner
            meta[SESSION_META_KEY] = call.session.key
        with self.relay.calling(ds.name, peer):
            result = await send({**extra, "_meta": dict(meta)} if meta else extra)  # a stamp takes keys out
            for _ in range(MAX_ROUNDS):
                if not isinstance(result, types.InputRequiredResult) or peer is None or peer.modern:
                    break  # a 2026-era client answers the rounds itself and retries through us
                answers = await self.relay.asking.answer(ds.name, peer, result.input_requests or {}, ds.timeout_s)
                if isinstance(answers, str):
                    raise DownstreamFailed(ds.name, f"{what} could not finish: {answers}")
                extra["inputResponses"] = {
                    k: v.model_dump(by_alias=True, mode="json", exclude_none=True) for k, v in answers.items()
                }
                extra["requestState"] = result.request_state
                result = await send({**extra, "_meta": dict(meta)} if meta else extra)
        if isinstance(result, types.InputRequiredResult) and (peer is None or not peer.modern):
            raise DownstreamFailed(ds.name, unconverged(what, result, extra.get("inputResponses") or {}))
        if isinstance(result, types.InputRequiredResult):  # on its way to a 2026-era client, which answers it
            for request in (result.input_requests or {}).values():
                unsafe = url_refusal(request)
                if unsafe is not None:
                    raise DownstreamFailed(ds.name, f"{what} asked the client to open a URL, refused: {unsafe}.")
        return result

    async def forward(self, call: Call, owners: "Owners") -> None:
        resource_owner = owners.resource
        match call.method:
            case "completion/complete":
                call.result = await self._complete(call, owners)
            case "resources/subscribe" | "resources/unsubscribe":
                server, original = resource_owner(call.params["uri"])
                call.server, call.tool = server, original
                who = (call.session.identity, call.secrets)
                await self.watch(call.session.key, server, original, call.method == "resources/subscribe", who)
                call.result = types.EmptyResult()
            case "logging/setLevel":
                await self._set_level(call)
                call.result = types.EmptyResult()
            case _:
                raise ValueError(f"the registry does not forward {call.method!r}")

    async def _complete(self, call: Call, owners: "Owners") -> types.CompleteResult:
        params = types.CompleteRequestParams.model_validate(call.params)
        ref = params.ref
        if isinstance(ref, types.PromptReference):
            server, original = owners.prompt(ref.name)
            mapped: types.PromptReference | types.ResourceTemplateReference = ref.model_copy(update={"name": original})
        else:
            server, original = owners.resource(ref.uri)
            mapped = ref.model_copy(update={"uri": original})
        call.server, call.tool = server, original
        async with self.lease(server, (call.session.identity, call.secrets)) as ds:
            if ds.capabilities is not None and ds.capabilities.completions is None:
                return EMPTY_COMPLETION  # the server offers no completions: nothing to suggest, not an error
            request = types.CompleteRequest(params=params.model_copy(update={"ref": mapped}))
            return await ds.request(request, types.CompleteResult)

    async def watch(self, key: str, server: str, original: str, on: bool, who: Who) -> None:
        """Subscribe (or unsubscribe) the subscriber `key` of identity `who` to a server's resource; the server (for
        a per-user server, that identity's own process) is asked once."""
        async with self.lease(server, who) as ds:
            audience = who[0].key if isinstance(self.downstreams[server], Pool) else None
            await self._watch(ds, key, server, original, on, audience)

    async def _watch(
        self, ds: Downstream, key: str, server: str, original: str, on: bool, audience: str | None
    ) -> None:
        resources = None if ds.capabilities is None else ds.capabilities.resources
        exposed = self.uris.exposed(server, original)
        if on and ds.capabilities is not None and not (resources is not None and resources.subscribe):
            raise RequestRejected(
                f"Server {server!r} offers no resource subscriptions, so {exposed!r} cannot be watched; "
                "read the resource again when you need it fresh."
            )
        if self.relay.watch(key, exposed, audience, on):  # the first subscriber subscribes the server, the last leaves
            await ds.subscribe(original, on)

    def release(self, exposed: str, audience: str | None) -> None:
        """Nobody watches `exposed` any more (its last subscriber's session ended): its server leaves it — of a
        per-user server, the `audience` identity's running processes only."""
        owner = self.uris.owner(exposed)
        ds = None if owner is None else self.downstreams.get(owner[0])
        if owner is None or ds is None:
            return  # the server went with a reload: nothing holds the subscription any more
        if isinstance(ds, Pool):
            if audience is not None:
                ds.release(audience, owner[1])
        else:
            ds.release(owner[1])

    def lease(self, server: str, who: Who) -> AbstractAsyncContextManager[Downstream]:
        """The downstream that serves `who`: the shared one, or for a per-user server that identity's own."""
        ds = self.downstreams[server]
        return ds.lease(*who) if isinstance(ds, Pool) else nullcontext(ds)  # every call passes: no generator

    async def _set_level(self, call: Call) -> None:
        level: types.LoggingLevel = call.params["level"]
        most = self.relay.logs.set_level(call.session.key, level)
        request = types.SetLevelRequest(params=types.SetLevelRequestParams(level=most))
        for ds in self.downstreams.values():
            if isinstance(ds, Pool):
                continue  # per-user processes come and go; they start at the server's default level
            caps = ds.capabilities
            if caps is None or caps.logging is None or ds.protocol_version in MODERN_PROTOCOL_VERSIONS:
                continue  # 2026-era servers take the level with each call instead
            # One connection serves every session: it gets the most verbose level any session asked for.
            with self.relay.calling(ds.name, call.peer):
                try:
                    await ds.request(request, types.EmptyResult)
                except DownstreamError as exc:  # one server's refusal must not cost the client its level elsewhere
                    logger.info("server %s: logging/setLevel not applied: %s", ds.name, exc)


def unconverged(what: str, result: types.InputRequiredResult, answered: dict[str, Any]) -> str:
    """Why a call's input rounds did not converge: the server's last asks, the answers by kind (never content)."""
    asked = ", ".join(f"{key}: {request.method}" for key, request in (result.input_requests or {}).items())
    gave = ", ".join(f"{key}: {_kind(answer)}" for key, answer in answered.items()) or "nothing"
    return (
        f"{what} still asked for input after {MAX_ROUNDS} rounds: its last round asked {asked or 'nothing'} "
        f"(requestState {str(result.request_state)[:40]!r}) after the client answered {gave}. The server did not "
        "accept the answers it was given; see its log, or call again with other arguments."
    )


def _kind(answer: Any) -> str:
    """An answer told by its shape: an elicitation's action, a sampled message's model, roots by count."""
    shape = answer if isinstance(answer, dict) else {}
    if "action" in shape:
        return f"elicitation {shape['action']}"
    if "roots" in shape:
        return f"{len(shape['roots'])} root(s)"
    return f"a message from {shape['model']}" if "model" in shape else "an answer"
