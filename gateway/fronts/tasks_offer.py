"""What the gateway tells clients about its tasks (`fronts.tasks`): the capability per era, every tool's task
support, and whether a 2026-era request allows a task at all."""

from typing import Any

import mcp.types as types
from mcp.types.version import MODERN_PROTOCOL_VERSIONS
from mcp_types import CLIENT_CAPABILITIES_META_KEY

TASKS_VERSION = "2025-11-25"
"""The one protocol version with tasks in its core (2026-07-28 moved them to an extension)."""
EXTENSION = "io.modelcontextprotocol/tasks"
"""The 2026-07-28 tasks extension (SEP-2663): the server decides which calls become tasks."""


def declares(params: Any) -> bool:
    """Whether a 2026-era request's envelope declares the tasks extension among its client capabilities (only then
    may it be answered with a task)."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    declared = meta.get(CLIENT_CAPABILITIES_META_KEY) if isinstance(meta, dict) else None
    extensions = declared.get("extensions") if isinstance(declared, dict) else None
    return isinstance(extensions, dict) and EXTENSION in extensions


def declared(capabilities: types.ServerCapabilities, version: str | None) -> types.ServerCapabilities:
    """`capabilities` with the gateway's tasks: for the handshake era list, cancel and task-augmented `tools/call`;
    for the 2026 era the tasks extension."""
    if version in MODERN_PROTOCOL_VERSIONS:
        return capabilities.model_copy(update={"extensions": {**(capabilities.extensions or {}), EXTENSION: {}}})
    calls = types.ServerTasksRequestsCapability(tools=types.TasksToolsCapability(call=types.TasksCallCapability()))
    tasks = types.ServerTasksCapability(
        list=types.TasksListCapability(), cancel=types.TasksCancelCapability(), requests=calls
    )
    return capabilities.model_copy(update={"tasks": tasks})


MARK = types.ToolExecution(task_support="optional")


def mark(version: str | None) -> types.ToolExecution | None:
    """What each listed downstream tool carries for a client of `version` (`Session.task_mark`)."""
    return MARK if version == TASKS_VERSION else None


def listed(result: types.ListToolsResult, version: str | None) -> types.ListToolsResult:
    """Every tool may be called as a task or not (`execution.taskSupport` "optional") where the client's version
    has tasks, whatever its server declared: the gateway runs any call as a task, and resolves a server's
    task-only tool into a plain answer. Other versions are left as they are (older ones drop `execution`,
    `eras.adapted`)."""
    if version != TASKS_VERSION:
        return result
    tools = [tool.model_copy(update={"execution": MARK}) for tool in result.tools]
    return result.model_copy(update={"tools": tools})
