"""`think.workflows.list` and the `workflow://` resources: context-lean workflow discovery.

Seed `list-workflows-context-optimization.md`: three modes (compact is the default), tags with AND
semantics, a substring `filter`, and the deprecated `detailed: bool` that still works with a warning.

- compact: name, description cut at a word boundary to 150 chars (+ "..." only when cut), tags,
  input_summary ("name (type, required|optional), ..." sorted by name; "No inputs required").
- standard: the same with the full description.
- detailed: name, full description, tags, version, author, full inputs, outputs (no input_summary).

Seed 003 lists `{id, version, desc}`: a call without `mode` (or `detailed`), the only call seed 003 knows, gets
those beside the compact fields; a call naming a mode gets exactly that mode's fields.
"""

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Literal, get_args

from gateway.think.errors import ThinkError
from gateway.think.workflow import Workflow

log = logging.getLogger(__name__)

Mode = Literal["compact", "standard", "detailed"]
MODES: dict[str, Mode] = {name: name for name in get_args(Mode)}
DEFAULT_MODE: Mode = "compact"
DESCRIPTION_LIMIT = 150
NO_INPUTS = "No inputs required"
INVALID_NAMES = 20
"""Names of workflow files that do not load shown in a compact or standard listing (the count covers all)."""
DEPRECATED_DETAILED = (
    "Parameter 'detailed' is deprecated and will be removed in a future version: use 'mode' instead "
    "(detailed=false -> mode='standard', detailed=true -> mode='detailed'; mode='compact' is the lean default)."
)


def truncate_description(text: str, limit: int = DESCRIPTION_LIMIT) -> str:
    """`text` with its whitespace collapsed; when longer than `limit`, cut at the last word boundary within
    `limit` chars (a single over-long word is cut hard) and suffixed with "..."."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    window = text[: limit + 1]  # one char more: a space right after the limit is a boundary too
    head = window.rsplit(" ", 1)[0] if " " in window else text[:limit]
    head = head.rstrip(" ,;:.-") or text[:limit]
    return head + "..."


def _required(decl: Mapping[str, Any]) -> bool:
    return bool(decl.get("required", False))  # JSON Schema's convention: optional unless marked


def input_summary(workflow: Workflow) -> str:
    """One line naming every input: "name (type, required|optional), ..." sorted by name."""
    if not workflow.inputs:
        return NO_INPUTS
    return ", ".join(
        f"{name} ({decl.get('type', 'any')}, {'required' if _required(decl) else 'optional'})"
        for name, decl in sorted(workflow.inputs.items())
    )


def full_inputs(workflow: Workflow) -> dict[str, dict[str, Any]]:
    """Every input as defined (file order): type, description, required, default (null when none), enum."""
    inputs: dict[str, dict[str, Any]] = {}
    for name, decl in workflow.inputs.items():
        entry: dict[str, Any] = {
            "type": decl.get("type", "any"),
            "description": decl.get("description", ""),
            "required": _required(decl),
            "default": decl.get("default"),
        }
        if "enum" in decl:
            entry["enum"] = list(decl["enum"])
        inputs[name] = entry
    return inputs


def entry(workflow: Workflow, mode: Mode) -> dict[str, Any]:
    """One workflow's listing entry in `mode`."""
    if mode == "compact":
        return {
            "name": workflow.name,
            "description": truncate_description(workflow.description),
            "tags": list(workflow.tags),
            "input_summary": input_summary(workflow),
        }
    if mode == "standard":
        return {
            "name": workflow.name,
            "description": workflow.description.strip(),
            "tags": list(workflow.tags),
            "input_summary": input_summary(workflow),
        }
    return {
        "name": workflow.name,
        "description": workflow.description.strip(),
        "tags": list(workflow.tags),
        "version": workflow.version,
        "author": workflow.author,
        "inputs": full_inputs(workflow),
        "outputs": dict(workflow.outputs),
    }


def seed_entry(workflow: Workflow) -> dict[str, Any]:
    """Seed 003's names for a listed workflow: `{id, version, desc}` (`desc`: the compact description)."""
    return {"id": workflow.name, "version": workflow.version, "desc": truncate_description(workflow.description)}


def _resolve_mode(mode: str | None, detailed: bool | None, warnings: list[str]) -> Mode:
    if detailed is not None:
        log.warning(DEPRECATED_DETAILED)
        warnings.append(DEPRECATED_DETAILED)
        if mode is None:
            mode = "detailed" if detailed else "standard"
        else:
            warnings.append(f"Both 'mode' and 'detailed' were given: mode={mode!r} is used, 'detailed' is ignored.")
    if mode is None:
        return DEFAULT_MODE
    if mode not in MODES:
        raise ThinkError(
            "INVALID_PARAMS",
            f"mode {mode!r} is not one of {', '.join(MODES)}",
            "Use mode 'compact' (default) to discover, 'detailed' for full inputs and outputs.",
        )
    return MODES[mode]


def _matches(workflow: Workflow, needle: str | None, wanted: Sequence[str]) -> bool:
    if needle and needle not in workflow.name.lower() and needle not in workflow.description.lower():
        return False
    have = {tag.lower() for tag in workflow.tags}
    return all(tag in have for tag in wanted)


def list_workflows(
    workflows: Sequence[Workflow],
    *,
    filter: str | None = None,
    tags: Sequence[str] | None = None,
    mode: Mode | None = None,
    detailed: bool | None = None,
    invalid_files: Mapping[str, ThinkError] | None = None,
) -> dict[str, Any]:
    """`{"workflows": [...], "count": n, "mode": m}` ordered by name, plus `"warnings"` when the deprecated
    `detailed` was used and `"invalid"` for the `invalid_files` (name -> why it does not load) that match.
    `filter`: case-insensitive substring of name or description; `tags`: the workflow must carry every one
    (case-insensitive).

    Raises:
        ThinkError: INVALID_PARAMS for an unknown mode.
    """
    warnings: list[str] = []
    resolved = _resolve_mode(mode, detailed, warnings)
    needle = filter.strip().lower() if filter else None
    wanted = [tag.strip().lower() for tag in tags or () if tag.strip()]
    chosen = sorted(
        (w for w in workflows if _matches(w, needle, wanted)),
        key=lambda w: (w.name, w.version),
    )
    # Seed 003's call (`{filter}`: no mode) reads `id`, `version` and `desc`; the listing seed's explicit modes have
    # exact fields (its tests assert `version` is not in compact). Only the call seed 003 makes gets both.
    seed_names = mode is None and detailed is None
    result: dict[str, Any] = {
        "workflows": [entry(w, resolved) | (seed_entry(w) if seed_names else {}) for w in chosen],
        "count": len(chosen),
        "mode": resolved,
    }
    if warnings:
        result["warnings"] = warnings
    broken = invalid(invalid_files or {}, filter=filter, tags=tags, mode=resolved)
    if broken is not None:
        result["invalid"] = broken
    return result


def invalid(broken: Mapping[str, ThinkError], *, filter: str | None, tags: Sequence[str] | None, mode: Mode) -> Any:
    """The workflow files that do not load, as the listing shows them: in compact and standard mode a count and
    at most INVALID_NAMES names (a broken file must not crowd out the list it sits in: seed 002), in detailed
    mode each one's problems too. `filter` applies to the names; a file that does not load has no tags to match."""
    needle = filter.strip().lower() if filter else None
    names = [] if any(t.strip() for t in tags or ()) else [n for n in broken if not needle or needle in n.lower()]
    if not names:
        return None
    body: dict[str, Any] = {"count": len(names), "names": names[:INVALID_NAMES]}
    if mode == "detailed":
        body["details"] = [broken[n].body() for n in names]
    else:
        body["guidance"] = "think.validate {workflow: <name>} lists a file's problems (or list with mode detailed)."
    return body


def metadata(workflow: Workflow) -> dict[str, Any]:
    """`workflow://metadata/{name}`: the detailed entry, the input summary, the driver version and the steps."""
    return {
        **entry(workflow, "detailed"),
        "input_summary": input_summary(workflow),
        "driver_version": workflow.driver_version,
        "limits": dict(workflow.limits),
        "step_count": len(workflow.steps),
        "steps": [
            {
                "id": step.id,
                "call": step.call,
                **({"when": step.when} if step.when else {}),
                **({"foreach": step.foreach} if step.foreach else {}),
            }
            for step in workflow.steps
        ],
    }


def input_schema(workflow: Workflow) -> dict[str, Any]:
    """`workflow://schema/{name}`: the inputs as a JSON Schema (draft 2020-12) object for `think.plan` params."""
    properties: dict[str, Any] = {}
    for name, decl in workflow.inputs.items():
        prop: dict[str, Any] = {}
        if "type" in decl:
            prop["type"] = decl["type"]
        if decl.get("description"):
            prop["description"] = decl["description"]
        if "default" in decl:
            prop["default"] = decl["default"]
        if "enum" in decl:
            prop["enum"] = list(decl["enum"])
        properties[name] = prop
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"{workflow.name} inputs",
        "type": "object",
        "properties": properties,
        "required": [name for name, decl in workflow.inputs.items() if _required(decl)],
        # think.plan refuses undeclared params; a workflow without an `inputs` block takes any
        "additionalProperties": not workflow.declares_inputs,
    }
