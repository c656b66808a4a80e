"""What the page reads of the running gateway (`app.gateway.Gateway` is one): named here, so the front imports
nothing of the composition root above it."""

from collections.abc import Mapping
from typing import Any, Protocol

import mcp.types as types

from gateway.config import GatewayConfig
from gateway.downstreams.oauth import OAuth
from gateway.fronts.door import Door
from gateway.middleware.exposure.view import Exposure
from gateway.middleware.policy import Policy
from gateway.pipeline import Call
from gateway.routing.registry import Registry
from gateway.session import SessionStore
from gateway.store.base import Outputs
from gateway.think.engine import Engine


class Report(Protocol):
    def as_dict(self) -> Mapping[str, Any]: ...


class Reloads(Protocol):
    @property
    def last(self) -> Report | None: ...

    async def reload_json(self) -> dict[str, Any]: ...


class Front(Protocol):
    """The client-facing front, for a tool tried from the page: a call as any client's, through the pipeline."""

    @property
    def sessions(self) -> SessionStore: ...
    @property
    def door(self) -> Door: ...

    async def call_tool(
        self, call: Call, rounds: dict[str, Any] | None = None
    ) -> types.CallToolResult | types.InputRequiredResult: ...


class Observed(Protocol):
    @property
    def front(self) -> Front: ...
    @property
    def config(self) -> GatewayConfig: ...
    @property
    def reloader(self) -> Reloads | None: ...
    @property
    def registry(self) -> Registry: ...
    @property
    def exposure(self) -> Exposure: ...
    @property
    def policy(self) -> Policy: ...
    @property
    def engine(self) -> Engine | None: ...
    @property
    def outputs(self) -> Outputs: ...
    @property
    def oauth(self) -> OAuth: ...

    def health(self) -> dict[str, Any]:
        """What `/healthz` tells a caller who passed auth: `status` (ok, degraded), `servers`, `died`."""
        ...
