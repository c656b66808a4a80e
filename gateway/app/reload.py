"""Config reload without a restart: on SIGHUP, a change of the file, or `POST /reload` (`gateway reload --url`).

The new file is validated first; an invalid one is refused and logged, and the running config stays. Then only the
servers whose definition changed are restarted (the new process starts, is swapped in, and the old one gets its
`timeout_s` to finish the calls in flight before it is closed), added ones start, removed ones close the same way.
Clients hear `list_changed` only for the kinds whose exposed catalog actually changed (and `tools` when the
`exposure` section did, every kind when `policy` did: what a session is listed may differ). The request pipeline is
rebuilt from the new config for calls that start afterwards (`Gateway.reconfigure`); the few keys that only a restart
applies are named in the report with why (`gateway.app.reloadable`).
"""

import json
import logging
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine
from contextlib import AsyncExitStack, suppress
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import httpx2
from anyio.streams.memory import MemoryObjectSendStream

from gateway.app.reloadable import POOLED, split
from gateway.app.watch import watch_file, watch_signal
from gateway.config import GatewayConfig, ServerConfig, load_config
from gateway.downstreams.downstream import Downstream
from gateway.downstreams.pool import Pool
from gateway.downstreams.secrets import references
from gateway.errors import ConfigError, GatewayError, describe
from gateway.routing.catalog import Catalog
from gateway.routing.registry import Registry

logger = logging.getLogger(__name__)

_STOPPED = "the reloader has stopped (/healthz says why); restart the gateway to apply the file"


@dataclass(slots=True)
class Report:
    ok: bool
    error: str | None = None
    added: list[str] = field(default_factory=list[str])
    removed: list[str] = field(default_factory=list[str])
    restarted: list[str] = field(default_factory=list[str])
    unchanged: list[str] = field(default_factory=list[str])
    timings: dict[str, float] = field(default_factory=dict[str, float])
    """Seconds from the reload's start to the end of each step: `validated`, `up:<server>` (started, initialized and
    taking calls), `listed` (the new catalog read; clients told next). Retiring old servers is not waited for."""
    notified: list[str] = field(default_factory=list[str])
    """Kinds (`tools`, `resources`, `prompts`) whose list changed, so clients were told."""
    applied: list[str] = field(default_factory=list[str])
    """Changed sections other than `servers` (`limits` by key) that now apply to calls that start."""
    needs_restart: dict[str, str] = field(default_factory=dict[str, str])
    """Changed keys that only a restart applies, each with why; their running value stays."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def fingerprint(catalog: Catalog) -> dict[str, Any]:
    """What clients see of each kind, comparable across reloads."""
    return {
        "tools": {n: e.item.model_dump_json() for n, e in catalog.tools.items()},
        "prompts": {n: e.item.model_dump_json() for n, e in catalog.prompts.items()},
        "resources": sorted(r.model_dump_json() for r in [*catalog.resources, *catalog.resource_templates]),
    }


async def _logged(what: str, step: Callable[[], Awaitable[None]]) -> None:
    """A reload's background step: its failure is logged, and never cancels the reloader's task group."""
    try:
        await step()
    except Exception:  # the reload is done: serving and later reloads go on
        logger.exception("reload: %s failed", what)


class Reloader:
    def __init__(
        self,
        path: Path,
        config: GatewayConfig,
        registry: Registry,
        make: Callable[[str, ServerConfig], Downstream | Pool],
        notify: Callable[[str], None],
        reconfigure: Callable[[GatewayConfig], Callable[[], Coroutine[Any, Any, None]]],
    ) -> None:
        self.path = path
        self.config = config
        self.registry = registry
        self._make = make
        self._notify = notify
        self._reconfigure = reconfigure
        self.last: Report | None = None
        """The last reload's report (`/healthz` shows it: whether an edit of the file applied, and how fast)."""
        self.quiet = False
        """True while servers are swapped: their start-up list announcements are not passed on to clients."""
        self._send, self._receive = anyio.create_memory_object_stream[MemoryObjectSendStream[Report]](16)

    async def reload(self) -> Report:
        """Ask the reloader task for a reload and wait for its report (reloads run one at a time)."""
        reply_send, reply_receive = anyio.create_memory_object_stream[Report](1)
        with reply_receive:
            try:
                await self._send.send(reply_send)
            except BaseException as exc:
                # Cancelled at the send's checkpoint, the reloader never got the stream: closed here, or it is left
                # for the garbage collector to warn about. Cancelled while waiting, it may have: it finds it closed.
                reply_send.close()
                if isinstance(exc, anyio.ClosedResourceError | anyio.BrokenResourceError):
                    return Report(ok=False, error=_STOPPED)
                raise
            try:
                return await reply_receive.receive()
            except anyio.EndOfStream:
                return Report(ok=False, error=_STOPPED)

    async def reload_json(self) -> dict[str, Any]:
        return (await self.reload()).as_dict()

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """The task that owns reloaded servers (they are entered here and, at shutdown, exited here first)."""
        try:
            async with anyio.create_task_group() as tg, AsyncExitStack() as stack:  # ends when cancelled
                tg.start_soon(watch_signal, self.reload)
                tg.start_soon(watch_file, self.path, self.reload)
                task_status.started()
                async for reply in self._receive:
                    with reply:
                        self.last = await self._attempt(stack, tg)
                        try:
                            reply.send_nowait(self.last)
                        except (anyio.BrokenResourceError, anyio.ClosedResourceError):  # the requester is gone
                            logger.debug("reload: the report's requester is gone")
        finally:
            self._send.close()  # no new requests; those queued hear `_STOPPED` rather than wait for good
            with suppress(anyio.WouldBlock, anyio.EndOfStream):
                while True:
                    self._receive.receive_nowait().close()
            self._receive.close()

    async def _attempt(self, stack: AsyncExitStack, tg: anyio.abc.TaskGroup) -> Report:
        """One reload. Whatever it raises is a refused reload, never the end of the reloader (nor of serving)."""
        try:
            return await self._apply(stack, tg)
        except Exception as exc:  # a bug here must cost this reload, not every later one
            logger.exception("reload of %s failed", self.path)
            return Report(ok=False, error=f"{self.path}: the reload failed ({describe(exc)}); see the gateway's log")

    async def _apply(self, stack: AsyncExitStack, tg: anyio.abc.TaskGroup) -> Report:
        started = time.perf_counter()
        try:
            fresh = await anyio.to_thread.run_sync(partial(load_config, self.path, whole=True))
        except ConfigError as exc:
            logger.error("reload refused, the running config stays:\n%s", exc)
            return Report(ok=False, error=str(exc))
        fresh, applied, needs_restart = split(self.config, fresh)
        old, new = self.config.servers, dict(fresh.servers)
        # A per-identity pool (`${user:…}` secrets) is not swapped live (yet): its change waits for a restart.
        pooled = {
            n
            for n in {*old, *new}
            if old.get(n) != new.get(n)
            and (isinstance(self.registry.downstreams.get(n), Pool) or (n in new and references(new[n])))
        }
        for name in pooled:
            if name in old:
                new[name] = old[name]
            else:
                del new[name]
        needs_restart.update({f"servers.{n}": POOLED for n in sorted(pooled)})
        fresh = fresh.model_copy(update={"servers": new})
        report = Report(
            ok=True,
            added=[n for n in new if n not in old],
            removed=[n for n in old if n not in new],
            restarted=[n for n in new if n in old and new[n] != old[n]],
            unchanged=[n for n in new if n in old and new[n] == old[n] and n not in pooled],
            applied=applied,
            needs_restart=needs_restart,
            timings={"validated": round(time.perf_counter() - started, 3)},
        )
        if applied:
            try:
                retire = self._reconfigure(fresh)
            except (GatewayError, OSError, ValueError) as exc:  # an unknown driver version, an audit file unopenable
                logger.error("reload refused, the running config stays: %s", describe(exc))
                return Report(ok=False, error=f"the new config could not be applied ({describe(exc)}); nothing changed")
            tg.start_soon(_logged, "retiring the replaced pipeline", retire)
        for key, why in needs_restart.items():
            logger.warning("reload: %s changed but needs a restart: %s; the running value stays", key, why)
        before = fingerprint(await self.registry.catalog())
        self.quiet = True
        try:
            retiring = [self.registry.downstreams[n] for n in [*report.restarted, *report.removed]]
            for name in report.removed:
                self.registry.replace(name, None)
            fresh_servers: list[tuple[str, Downstream]] = []
            for name in [*report.added, *report.restarted]:
                made = self._make(name, new[name])
                assert isinstance(made, Downstream)  # pooled servers were set aside above
                fresh_servers.append((name, await stack.enter_async_context(made.running())))  # starts it
            async with anyio.create_task_group() as waiting:  # each takes calls as soon as it is up
                for name, made in fresh_servers:
                    waiting.start_soon(self._swap_in, name, made, new[name], report, started)
            self.config = fresh
            after = fingerprint(await self.registry.catalog())
            report.timings["listed"] = round(time.perf_counter() - started, 3)
        finally:
            self.quiet = False
        for retired in retiring:
            if isinstance(retired, Downstream):
                tg.start_soon(_logged, f"closing the replaced server {retired.name}", partial(_retire, retired))
        # What each session is listed may differ: exposure shapes tool lists, the policy every kind's.
        relisted = {"tools"} if "exposure" in applied else set()
        relisted |= set(before) if "policy" in applied else set()
        report.notified = [kind for kind in before if before[kind] != after[kind] or kind in relisted]
        for kind in report.notified:
            self._notify(kind)
        logger.info("reload: %s", {k: v for k, v in report.as_dict().items() if v and k != "ok"})
        return report

    async def _swap_in(self, name: str, new: Downstream, server: ServerConfig, report: Report, since: float) -> None:
        await new.settled()  # up, or failed once (then it retries in the background, as at start)
        self.registry.replace(name, new, server.tools)
        report.timings[f"up:{name}"] = round(time.perf_counter() - since, 3)


async def _retire(downstream: Downstream) -> None:
    await downstream.close(drain_s=downstream.timeout_s)
    logger.info("reload: server %s closed", downstream.name)


def request_reload(url: str, token: str | None) -> int:
    """`gateway reload --url`: POST /reload; prints the report; exit 0 when applied, 1 when refused or unreachable."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        response = httpx2.post(f"{url.rstrip('/')}/reload", headers=headers, timeout=120)
    except httpx2.HTTPError as exc:
        print(f"gateway reload: cannot reach {url}: {exc}", file=sys.stderr)  # noqa: T201 -- the CLI's output
        return 1
    if response.headers.get("content-type", "").startswith("application/json"):
        print(json.dumps(response.json(), indent=1))  # noqa: T201
    else:
        print(f"gateway reload: {url} answered HTTP {response.status_code}: {response.text[:500]}", file=sys.stderr)  # noqa: T201
    return 0 if response.status_code == 200 else 1
