"""The gateway's exceptions and the ONE mapping from them to what an MCP client sees.

    GatewayError
    ├── ConfigError            the config file is unreadable or invalid (CLI audience)
    ├── PrepareFailed          a `package:`/`npm:` server's environment could not be installed
    ├── UnknownName            a tool, resource or prompt the catalog does not hold
    ├── RequestRejected        the gateway refuses to forward a request (e.g. too large)
    │   └── TaskCapReached     an identity has as many tasks running (or kept) as `limits` allows
    └── DownstreamError        a downstream could not answer
        ├── DownstreamUnavailable   not connected (starting, restarting, down)
        ├── DownstreamTimeout       no answer within the server's `timeout_s`
        └── DownstreamFailed        the connection broke mid-call, or the server answered with an error

Two audiences: developers get these exceptions; the model gets `to_tool_result()` (an `isError` result
that says what happened and what to do next) for tool calls, `to_mcp_error()` for everything else, and
`jsonrpc_error()` where a front answers on the wire itself (the lanes, the body limit, the bearer refusal).
"""

from typing import Any

import mcp.types as types
from mcp import MCPError


def shown(value: str, keep: int = 64) -> str:
    """A name or id a client sent, as a message shows it: quoted, and cut when long (a client's id may be any size:
    one of 5,000 characters is shown by its first `keep` and its length)."""
    return repr(value) if len(value) <= keep else f"{value[:keep]!r}… ({len(value):,} characters)"


class GatewayError(Exception):
    """Base class; `str(exc)` is written for the model: what happened, the value, what to do next."""

    code: int = types.INTERNAL_ERROR

    def logged(self) -> str:
        """The message as logs and the page show it: without what only the caller may see (a sign-in link)."""
        return self.hide(str(self))

    def hide(self, text: str) -> str:
        """`text` (this message, or an answer that carries it) without what only the caller may see."""
        return text


class ConfigError(GatewayError):
    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = problems
        super().__init__("\n".join(f"{source}: {p}" for p in problems))


class PrepareFailed(GatewayError):
    """A server's package could not be installed into (or run from) its own environment (`downstreams.envs`);
    `busy`: another process is installing it right now, which a later attempt outlives."""

    def __init__(self, message: str, *, busy: bool = False) -> None:
        self.busy = busy
        super().__init__(message)


class UnknownName(GatewayError):
    code = types.INVALID_PARAMS

    def __init__(self, kind: str, name: str, closest: list[str]) -> None:
        self.kind, self.name, self.closest = kind, name, closest
        hint = f" Closest known {kind}s: {', '.join(closest)}." if closest else ""
        super().__init__(f"Unknown {kind} {shown(name, 200)}.{hint} List {kind}s again to see what is available.")


class RequestRejected(GatewayError):
    code = types.INVALID_PARAMS


class TaskCapReached(RequestRejected):
    """An identity asked for a task with as many running (`kind` "running") or kept ("kept") as `limits` allows;
    nothing was started. `next_s`: when the owner's soonest kept task expires (kept only; None: unknown)."""

    def __init__(self, kind: str, cap: int, count: int, next_s: float | None = None) -> None:
        self.kind, self.cap, self.count = kind, cap, count
        if kind == "running":
            what = (
                f"{count} tasks running, the most one identity may (limits.task_max_running: {cap}). Wait for one to "
                "finish (tasks/get, tasks/result) or cancel one you no longer need (tasks/cancel), then call again"
            )
        else:
            soonest = f" (the next one goes in {next_s:.0f} s)" if next_s is not None else ""
            what = (
                f"{count} tasks kept, the most one identity may (limits.task_max_kept: {cap}). A task is kept until "
                f"its ttl passes, finished or not{soonest}: cancel the ones still running that you no longer need "
                "(tasks/cancel), ask for a shorter task ttl from now on, or wait"
            )
        super().__init__(f"The call was not started as a task: this identity already has {what}.")


class TaskNotFound(GatewayError):
    code = types.INVALID_PARAMS

    def __init__(self, task_id: str) -> None:
        super().__init__(
            f"No task {shown(task_id)}: it never existed for this identity, or its ttl passed and it was "
            "forgotten. Call tasks/list for the tasks you have, or run the call again."
        )


class TaskCancelled(GatewayError):
    code = types.INVALID_PARAMS

    def __init__(self, task_id: str) -> None:
        super().__init__(f"Task {task_id!r} was cancelled before it finished: it has no result. Run the call again.")


class TaskFailed(GatewayError):
    """A task that ended `failed` without a result (its runner stopped, or its result could not be stored)."""

    def __init__(self, task_id: str, why: str) -> None:
        super().__init__(f"Task {task_id!r} failed and has no result: {why}")


class DownstreamError(GatewayError):
    def __init__(self, server: str, message: str) -> None:
        self.server = server
        super().__init__(message)


class DownstreamUnavailable(DownstreamError):
    def __init__(self, server: str, state: str, last_error: str | None) -> None:
        why = f" Last error: {last_error}." if last_error else ""
        super().__init__(
            server,
            f"Server {server!r} is {state} and cannot take calls right now.{why} "
            "The gateway retries it in the background; try again shortly or use another server's tools.",
        )


class DownstreamTimeout(DownstreamError):
    code = types.REQUEST_TIMEOUT

    def __init__(self, server: str, seconds: float, setting: str = "timeout_s") -> None:
        super().__init__(
            server,
            f"Server {server!r} did not answer within {seconds:g} s (its {setting}). "
            "Retry once; if it keeps timing out, ask for less at a time.",
        )


class DownstreamFailed(DownstreamError):
    def __init__(self, server: str, detail: str, *, code: int = types.INTERNAL_ERROR) -> None:
        self.code = code
        super().__init__(server, f"Server {server!r} failed: {detail}")


def from_downstream(
    server: str, exc: MCPError, timeout_s: float, *, lost: bool, timed_out: bool, setting: str = "timeout_s"
) -> DownstreamError:
    """Map an SDK error from a downstream call to our family (the downstream boundary).

    `lost` and `timed_out` say what happened (the transport ended; the time limit passed: `timeout_s`, held by
    the server's `setting`). The code
    cannot: a server may answer -32000 or -32001 itself, and that is an answer, not a lost connection.
    """
    if lost:
        return DownstreamFailed(
            server,
            f"the connection was lost during the call ({exc.message}). The gateway is restarting it; retry the call.",
            code=types.CONNECTION_CLOSED,
        )
    if timed_out:
        return DownstreamTimeout(server, timeout_s, setting)
    return DownstreamFailed(server, f"{exc.message} (error {exc.code}).", code=exc.code)


def describe(exc: BaseException) -> str:
    """A foreign exception (OS, transport, SDK) in one line for logs and /healthz; unwraps single-member groups."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    if isinstance(exc, OSError) and exc.strerror:
        # str() would add "[Errno 2]"; the stdio adapter puts the command in strerror, a bare OS error in filename.
        return (
            f"cannot start: {exc.strerror}: {exc.filename!r}"
            if exc.filename
            else f"{type(exc).__name__}: {exc.strerror}"
        )
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}"


def to_tool_result(exc: GatewayError) -> types.CallToolResult:
    """What the model sees when a tool call fails in or behind the gateway."""
    return types.CallToolResult(content=[types.TextContent(text=str(exc))], is_error=True)


def to_mcp_error(exc: GatewayError) -> MCPError:
    """The JSON-RPC error for failures of methods other than tools/call."""
    # -32000 would make clients believe their connection to the gateway closed.
    code = types.INTERNAL_ERROR if exc.code == types.CONNECTION_CLOSED else exc.code
    return MCPError(code=code, message=str(exc))


def jsonrpc_error(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    """A JSON-RPC error response, for the places that answer on the wire without the SDK: the one envelope."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}
