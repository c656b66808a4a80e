"""Config of the response pipeline: `limits`, `steering`, `versions`, `bootstrap`."""

import re
from typing import Literal, Self

from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from gateway.config.base import ConfigModel

MIB = 1024 * 1024
TASK_HEARTBEAT_S = 5.0
"""The heartbeat of running tasks. A reader declares a task dead only after LAPSE_BEATS (6) periods, 30 s, without a
beat: on a busy machine (2 cores, load 10) the event loop may lag seconds, a local beat waits for fsync behind other
writers, and one to Redis may ride out its client's retries (about 5 s each); several late beats in a row still
land inside the lapse. Shorter would cost a write per running task more often; longer, a client waits longer to
hear that the process running its task is gone."""
# The version ends on a word character: "Use nodejs@20." in prose means 20, not "20.".
DEFAULT_PATTERN = r"(?<![\w@.-])([A-Za-z][\w.-]*?)@(\d(?:[\w.+-]*\w)?)"
"""A `name@version` token: a name starting with a letter, `@`, a version starting with a digit."""


class SizeLimitsConfig(ConfigModel):
    """Per-server or per-tool overrides of the size guard."""

    max_inline_bytes: int | None = Field(default=None, ge=1000)
    """Results above this are spilled to disk and previewed."""
    max_request_bytes: int | None = Field(default=None, ge=1)
    """Tool arguments above this are not forwarded."""


class LimitsConfig(ConfigModel):
    max_message_bytes: int = Field(default=64 * MIB, ge=1024)
    """Largest message a client may send (HTTP body, stdio line); bigger ones get an error naming this limit."""
    max_downstream_bytes: int = Field(default=256 * MIB, ge=1024)
    """Largest single message accepted from a downstream (per server: `max_message_bytes` / `max_event_bytes`).
    Results below it reach the size guard and are spilled; bigger ones fail the call with an error."""
    max_inline_bytes: int = Field(default=20_000, ge=1000)
    """Tool results above this many bytes are spilled to the outputs store; the client gets a preview."""
    max_request_bytes: int = Field(default=10 * MIB, ge=1)
    """Tool arguments above this many bytes are not forwarded; the caller is told what to send instead."""
    truncation_strategy: Literal["head", "tail", "both"] = "both"
    """Which part of a spilled result the preview shows."""
    hint_budget_chars: int = Field(default=2048, ge=100)
    """Room for gateway hints per result (the driver bootstrap has its own size)."""
    outputs_dir: str = ".gateway/outputs"
    """Where spilled results go; a relative path resolves against the config file's folder."""
    outputs_ttl_s: float = Field(default=7200.0, gt=0)
    """How long spilled results are kept."""
    url_elicitations_per_session: int = Field(default=32, ge=1)
    """URL-mode elicitations whose asking session the gateway remembers per session, until the server announces
    their completion (oldest dropped first; a completion for a dropped one reaches nobody and is logged)."""
    url_elicitation_ttl_s: float = Field(default=3600.0, gt=0)
    """How long such an ask is remembered."""
    task_after_s: float = Field(default=10.0, ge=0)
    """A 2026-era client that declared the tasks extension gets a task for a call still running after this long
    (the call goes on in the background; shorter calls are answered as usual)."""
    task_max_ttl_s: float = Field(default=86_400.0, gt=0)
    """The longest a task is kept in the store, whatever ttl its client asks for."""
    task_max_running: int = Field(default=32, ge=1)
    """Tasks one identity may have running at once, on all replicas together; past it a task-augmented call is
    refused, saying so (a 2026-era call that outlasts `task_after_s` then stays a plain call). Each is a downstream
    call the client no longer waits for: without a cap one token could start a thousand."""
    task_max_kept: int = Field(default=1000, ge=1)
    """Tasks one identity may have in the store at once, finished or not (each is kept until its ttl passes); past
    it a task-augmented call is refused, saying when the next one goes. Bounds the store per identity (a record
    holds at most a preview of its result: about `max_inline_bytes`)."""
    task_heartbeat_s: float = Field(default=TASK_HEARTBEAT_S, gt=0)
    """How often the gateway process running a task marks it alive in the store; a task whose mark is older than
    `fronts.tasks_alive.LAPSE_BEATS` of these is reported failed (its process stopped). Lower only in tests."""
    startup_wait_s: float = Field(default=10.0, ge=0)
    """How long start-up waits for slow servers' handshakes before serving without them; a late one is added
    when it comes up and clients hear `list_changed` (each server still retries per its `connect_timeout_s`)."""
    tools: dict[str, SizeLimitsConfig] = {}
    """Overrides by exposed tool name glob (`git.git_log`, `gitlab.*`); first match wins, before server limits."""


class HintRuleConfig(ConfigModel):
    tools: list[str] = Field(min_length=1)
    """Exposed tool name globs the rule applies to."""
    on: Literal["success", "error", "empty", "truncated", "any"] = "success"
    """When the hint is added."""
    text: str = Field(min_length=1, max_length=1000)
    """The hint, e.g. `Next: call jira.jira_get_issue for the linked ticket.`"""


class SteeringConfig(ConfigModel):
    hints: list[HintRuleConfig] = []
    """Rules appending "what to do next" hints to tool results."""


class VersionSourceConfig(ConfigModel):
    type: Literal["file", "http", "tool"]
    """`file` (JSON on disk), `http` (JSON over HTTP) or `tool` (a downstream tool's JSON result)."""
    path: str | None = None
    """For `file`: relative paths resolve against the config file's folder."""
    url: str | None = None
    """For `http`."""
    headers: dict[str, str] = {}
    """For `http`."""
    timeout_s: float = Field(default=5.0, gt=0)
    """For `http`: a slower source counts as down."""
    tool: str | None = None
    """For `tool`: the exposed tool name, e.g. `catalog.list_versions`."""
    arguments: dict[str, object] = {}
    """For `tool`."""

    @model_validator(mode="after")
    def _needs_its_field(self) -> Self:
        needed = {"file": "path", "http": "url", "tool": "tool"}[self.type]
        if getattr(self, needed) is None:
            raise ValueError(f"a {self.type!r} source needs `{needed}`")
        return self


class VersionCatalogConfig(ConfigModel):
    source: VersionSourceConfig
    ttl_s: float = Field(default=3600.0, gt=0)
    """How long a fetched catalog is used; a failing source keeps the last good one."""
    append_catalog_to: list[str] = []
    """Tool globs whose results get the compact live list (`bun@{1.1.34,1.2} | nodejs@{18,20,22}`)."""


class VersionCheckConfig(ConfigModel):
    catalog: str
    """Name of a catalog under `versions.catalogs`."""
    tools: list[str] = ["*"]
    """Tool globs whose calls are checked."""
    scan: list[Literal["arguments", "result"]] = ["arguments", "result"]
    """Where to look for `name@version` tokens."""
    pattern: str = DEFAULT_PATTERN
    """Regex with two groups: name and version."""

    @field_validator("pattern")
    @classmethod
    def _two_groups(cls, pattern: str) -> str:
        try:
            groups = re.compile(pattern).groups
        except re.error as exc:
            raise ValueError(f"not a valid regex: {exc}") from None
        if groups != 2:
            raise ValueError(f"needs exactly 2 groups (name, version), has {groups}")
        return pattern


class VersionsConfig(ConfigModel):
    catalogs: dict[str, VersionCatalogConfig] = {}
    """Live version catalogs by name."""
    checks: list[VersionCheckConfig] = []
    """Which calls are checked against which catalog."""

    @model_validator(mode="after")
    def _checks_name_catalogs(self) -> Self:
        # Raised as a ValidationError so each problem is located at `versions.checks[i].catalog`
        # (pydantic prefixes the outer path), not at `versions`; every bad check is reported.
        known = ", ".join(self.catalogs) or "none"
        problems: list[InitErrorDetails] = [
            {
                "type": PydanticCustomError(
                    "value_error",
                    "{msg}",
                    {"msg": f"{check.catalog!r} is not defined under versions.catalogs (defined: {known})"},
                ),
                "loc": ("checks", i, "catalog"),
                "input": check.catalog,
            }
            for i, check in enumerate(self.checks)
            if check.catalog not in self.catalogs
        ]
        if problems:
            raise ValidationError.from_exception_data(type(self).__name__, problems)
        return self


class BootstrapConfig(ConfigModel):
    mode: Literal["full", "summary", "off"] = "summary"
    """What the first tool result of a session carries: the whole driver prompt, a summary, or nothing."""
    driver_version: str | None = None
    """Driver prompt version from `prompts/prompts.yml`; None = its `current`."""
