"""Checks that need more than the workflow file: the params of a run, the success schemas on disk, the deployment.

`think.plan` refuses a run that could reach a step it can never pass (a variable no param and no capture gives,
a success schema that does not exist), listing every such problem at once instead of stalling mid-run; and
`think.validate` reports the same, plus the limits the deployment lowers.
"""

import json
from collections.abc import Iterator, Mapping
from functools import partial
from typing import Any

from jinja2 import nodes

from gateway.think.errors import Diagnostic, ThinkError
from gateway.think.graph import BUILTIN_NAMES, LOOP_NAMES, Graph
from gateway.think.templates import Templates
from gateway.think.validator import Schemas
from gateway.think.workflow import Step, Workflow
from gateway.think.workflow import step_path as _path

_GUARD_FILTERS = frozenset({"default", "d"})
_GUARD_TESTS = frozenset({"defined", "undefined", "none"})


def _root(node: nodes.Node) -> str | None:
    """`params.<key>[.<key>…]` (seed 003 nests them: `params.jira.ticket_id`) or the root name an expression such
    as `a.b[0]` reads (None for anything else)."""
    keys: list[Any] = []
    while isinstance(node, nodes.Getattr | nodes.Getitem):
        keys.append(node.attr if isinstance(node, nodes.Getattr) else getattr(node.arg, "value", None))
        node = node.node
    if not isinstance(node, nodes.Name):
        return None
    if node.name != "params":
        return node.name
    path: list[str] = []
    for key in reversed(keys):  # outermost first; an index or a computed key ends what can be checked
        if not isinstance(key, str):
            break
        path.append(key)
    return "params." + ".".join(path) if path else "params"


def _nested(keys: list[str]) -> Any:
    """`["jira", "ticket_id"]` -> `{"jira": {"ticket_id": "…"}}`: the params shape a nested read wants."""
    return {keys[0]: _nested(keys[1:])} if keys else "…"


def present(params: Mapping[str, Any], dotted: str) -> bool:
    """Whether `a.b.c` is in `params`: False only where a mapping lacks the key (past a value that is no mapping,
    e.g. `name.upper`, the rest is the value's own attribute, not a param)."""
    value: Any = params
    for key in dotted.split("."):
        if not isinstance(value, Mapping):
            return True
        if key not in value:
            return False
        value = value[key]
    return True


def _reads(node: nodes.Node, found: set[str]) -> set[str]:
    """Names (and `params.<key>`) the tree reads whatever the data: the right side of `and`/`or`, the branches of
    an `if`, a loop's body and what `| default` or `is defined` guards run only sometimes, so a name read only
    there may be missing (`params.mode == 'a' and params.only_for_a`)."""
    match node:
        case nodes.And() | nodes.Or():
            return _reads(node.left, found)
        case nodes.CondExpr() | nodes.If():
            return _reads(node.test, found)
        case nodes.For():
            return _reads(node.iter, found)
        case nodes.Filter() | nodes.Test() if node.name in (_GUARD_FILTERS | _GUARD_TESTS):
            for child in node.iter_child_nodes(exclude=("node",)):
                _reads(child, found)
            return found
        case nodes.Name(ctx="load"):
            found.add(node.name)
            return found
        case nodes.Getattr() | nodes.Getitem() if (root := _root(node)) is not None and root.startswith("params."):
            if not root.startswith("params._"):  # the sandbox refuses it when rendering, with its own error
                found.add(root)
            return found
    for child in node.iter_child_nodes():
        _reads(child, found)
    return found


def _strings(template: Any) -> Iterator[str]:
    if isinstance(template, Mapping):
        for value in template.values():
            yield from _strings(value)
    elif isinstance(template, list):
        for value in template:
            yield from _strings(value)
    elif isinstance(template, str) and ("{{" in template or "{%" in template):
        yield template


def needs(step: Step, templates: Templates) -> set[str]:
    """What a step's input_template, `when` and `foreach` read without a guard (the workflow already parsed)."""
    found: set[str] = set()
    for text in _strings(step.input_template):
        tree = templates.tree(text)
        found |= {n for n in _reads(tree, set()) if n.startswith("params.") or n in templates.undeclared(tree)}
    for expression in (step.when, step.foreach):
        if expression:
            found |= _reads(templates.expression_tree(expression), set())
    return found


def unresolved(graph: Graph, templates: Templates, params: Mapping[str, Any]) -> list[Diagnostic]:
    """Every variable a step reads that neither these params, a capture of the workflow nor a built-in gives
    (UNRESOLVED_VAR, one per step and name): the step could never render."""
    workflow = graph.workflow
    known = set(params) | set(graph.producers) | (BUILTIN_NAMES - LOOP_NAMES)
    given = ", ".join(sorted(params)) or "none"
    problems: list[Diagnostic] = []
    for index, step in enumerate(workflow.steps):
        missing = sorted(
            name
            for name in needs(step, templates)
            if (not present(params, name.removeprefix("params.")) if name.startswith("params.") else name not in known)
            and not (name in LOOP_NAMES and step.foreach)
        )
        for name in missing:
            key = name.removeprefix("params.")
            shown = repr(key) if "." not in key else json.dumps(_nested(key.split(".")), ensure_ascii=False)
            problems.append(
                Diagnostic(
                    "UNRESOLVED_VAR",
                    workflow.source,
                    _path(workflow, index, step),
                    f"step {step.id!r} reads {name!r}, which neither the params of this run nor a capture gives",
                    f"Pass {shown} in think.plan's params (given: {given}), or guard it in the template "
                    f"(`{name} | default(...)`).",
                )
            )
    return problems


def undeclared_params(workflow: Workflow, templates: Templates) -> list[Diagnostic]:
    """`params.<key>` reads of a workflow with an `inputs` block where the key is no input (a typo)."""
    if not workflow.declares_inputs:
        return []
    return [
        Diagnostic(
            "UNRESOLVED_VAR",
            workflow.source,
            _path(workflow, index, step),
            f"step {step.id!r} reads {name!r}, which is not an input of {workflow.name}",
            f"Inputs: {', '.join(workflow.inputs) or 'none'}; fix the name or declare the input.",
        )
        for index, step in enumerate(workflow.steps)
        for name in sorted(n for n in needs(step, templates) if n.startswith("params."))
        if name.removeprefix("params.").split(".")[0] not in workflow.inputs
    ]


def schema_problems(workflow: Workflow, schemas: Schemas) -> list[Diagnostic]:
    """Steps whose success_schema names no schema file, or is not a valid JSON Schema (VALIDATION_FAILED): a run
    would stall at that step for good."""
    problems: list[Diagnostic] = []
    for index, step in enumerate(workflow.steps):
        if step.success_schema is None:
            continue
        problem = partial(
            Diagnostic, "VALIDATION_FAILED", workflow.source, f"{_path(workflow, index, step)}.success_schema"
        )
        try:
            schemas.checked(step.success_schema)
        except ThinkError as exc:
            problems.append(problem(f"step {step.id!r}: {exc.details}", exc.guidance))
    return problems


def context_problems(workflow: Workflow) -> list[Diagnostic]:
    """`context` include/exclude names that are neither a step nor a capture of the workflow (UNRESOLVED_VAR)."""
    names = {s.id for s in workflow.steps} | {s.capture_as for s in workflow.steps if s.capture_as}
    return [
        Diagnostic(
            "UNRESOLVED_VAR",
            workflow.source,
            f"{_path(workflow, index, step)}.context",
            f"step {step.id!r}: context names {name!r}, which is neither a step nor a capture_as",
            f"Name steps or captures of {workflow.name}: {', '.join(sorted(n for n in names if n[:2] != '__'))}.",
        )
        for index, step in enumerate(workflow.steps)
        for name in dict.fromkeys([*step.context.include, *step.context.exclude])
        if name not in names
    ]


def over_ceiling(workflow: Workflow, ceiling: int) -> list[dict[str, str]]:
    """Warnings for `limits.max_snapshot_bytes` above the deployment's (workflow and step level): it is lowered."""
    found = [("limits", workflow.limits)] + [
        (f"{_path(workflow, i, s)}.limits", s.limits) for i, s in enumerate(workflow.steps)
    ]
    return [
        {
            "file": workflow.source,
            "path": f"{path}.max_snapshot_bytes",
            "message": f"max_snapshot_bytes {limits['max_snapshot_bytes']} is above the deployment's {ceiling}: "
            f"{ceiling} is used",
            "guidance": "A workflow may lower the deployment's think.max_snapshot_bytes, never raise it: remove the "
            "key or lower it, or raise think.max_snapshot_bytes in the gateway config.",
        }
        for path, limits in found
        if isinstance(limits.get("max_snapshot_bytes"), int) and limits["max_snapshot_bytes"] > ceiling
    ]
