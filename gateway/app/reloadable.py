"""What a config reload can apply to a running gateway, and what only a restart applies (and why).

Applied live: `servers` (only those whose definition changed restart), and everything the request pipeline is
built from: `limits` (size limits, hint budget, inline budget), `steering`, `versions`, `bootstrap`, `policy`,
`audit`, `exposure`; and the caps on each identity's tasks (`limits.task_max_running`, `task_max_kept`: read as
each task starts). The pipeline is rebuilt from the new config for calls that start after the reload; calls in
flight keep the one they started with. The keys below need a restart; a reload that changes one names it and
says why, and the running value stays (so the next reload names it again until the gateway restarts).
"""

from typing import Any

from gateway.config import GatewayConfig

RESTART_ONLY: dict[str, str] = {
    "listen": "the HTTP listener and its Host/Origin checks are set up when the gateway starts",
    "namespace": "every exposed name is built from it, and connected clients hold those names",
    "think": "the Think engine (state dir, workflow dirs, snapshot limits) is built when the gateway starts",
    "telemetry": "the trace exporter is installed when the gateway starts",
    "auth": "the HTTP front's authenticator is built when the gateway starts",
    "secrets": "per-user secret sources are opened when the gateway starts; per-user servers hold them",
    "store": "Think runs and spilled outputs live in the store; switching it live would strand them",
    "clients": "what the gateway remembers per client is opened with the store when the gateway starts",
    "limits.max_message_bytes": "the front's message size limit is set when it starts listening",
    "limits.max_downstream_bytes": "each server connection takes it when the gateway starts",
    "limits.outputs_dir": "the output store is opened when the gateway starts",
    "limits.outputs_ttl_s": "the output store is opened when the gateway starts",
    "limits.startup_wait_s": "it bounds the wait for servers when the gateway starts, and only then",
    "limits.task_heartbeat_s": "the heartbeat of running tasks starts with the gateway",
    "limits.task_after_s": "the front's task runner takes it when the gateway starts",
    "limits.task_max_ttl_s": "the front's task runner takes it when the gateway starts",
}
POOLED = "a server with ${user:…} secrets runs one process per identity; those are not swapped live (yet)"


def _value(config: GatewayConfig, key: str) -> Any:
    section, _, name = key.partition(".")
    value = getattr(config, section)
    return getattr(value, name) if name else value


def changed(old: GatewayConfig, new: GatewayConfig) -> list[str]:
    """The sections other than `servers` that differ; `limits` by field, since some of its fields apply live."""
    keys: list[str] = []
    for section in type(new).model_fields:
        if section == "servers" or getattr(old, section) == getattr(new, section):
            continue
        if section == "limits":
            keys += [
                f"limits.{f}"
                for f in type(new.limits).model_fields
                if _value(old, f"limits.{f}") != _value(new, f"limits.{f}")
            ]
        else:
            keys.append(section)
    return keys


def split(old: GatewayConfig, new: GatewayConfig) -> tuple[GatewayConfig, list[str], dict[str, str]]:
    """(the config to run now: `new` with the running value of each restart-only key, the changed keys that
    apply, the changed keys that need a restart with why)."""
    keys = changed(old, new)
    restart = {k: RESTART_ONLY[k] for k in keys if k in RESTART_ONLY}
    update: dict[str, Any] = {k: getattr(old, k) for k in restart if "." not in k}
    kept = {k.partition(".")[2]: _value(old, k) for k in restart if k.startswith("limits.")}
    if kept:
        update["limits"] = new.limits.model_copy(update=kept)
    return new.model_copy(update=update), [k for k in keys if k not in restart], restart
