"""The Think tab's data: each workflow's step graph, the viewer's latest runs drawn on it with every step's status,
and one run opened: its graph, captures (bounded previews), history and the replay check (`think.debug`'s
`replay`: the run re-run on its own captures, identical or where it differs).

Runs are the viewer's own (`Identity.owner`), as `think.state.get` answers them; another's run id is not found.
The replay is worked out only for the run opened, when someone opens it (it reads the run's spills).
"""

import json
import time
from typing import Any

from gateway.errors import GatewayError
from gateway.fronts.page.graph import Drawn, Step, layout
from gateway.fronts.page.views import span, when
from gateway.think import tools
from gateway.think.engine import Engine
from gateway.think.graph import build
from gateway.think.ops import Operations
from gateway.think.outcomes import tested
from gateway.think.state import RunState
from gateway.think.workflow import Workflow

PREVIEW_CHARS = 400
"""Characters of a capture shown on the page (its size says how much more there is)."""
MAX_CAPTURES = 50
MAX_HISTORY = 200
"""The newest history entries shown (the count says how many there are)."""


def _driver(step_id: str) -> bool:
    return step_id.startswith("__")  # the driver's own steps, not the author's


def workflow_graph(engine: Engine, workflow: Workflow) -> Drawn:
    """The author's steps with their explicit deps and the implicit ones their templates read (the checked graph's),
    or the explicit ones when the graph cannot be built (the tab says why elsewhere: the library's problems)."""
    deps = {s.id: tuple(s.deps) for s in workflow.steps}
    try:
        deps = build(workflow, engine.templates).deps  # no tool catalog: the edges need none
    except GatewayError:
        pass
    steps = [
        Step(
            s.id,
            s.call,
            deps.get(s.id, ()),
            tag="foreach" if s.foreach else "when" if s.when else None,
            tests=tested(s.when),
        )
        for s in workflow.steps
    ]
    return layout(steps)


def run_graph(run: RunState) -> Drawn:
    steps = [
        Step(
            sid,
            st.call,
            () if st.template_of not in (None, sid) else tuple(d for d in st.deps if not _driver(d)),
            st.status,
            st.reason,
            st.template_of if st.template_of not in (None, sid) else None,
        )
        for sid, st in run.steps.items()
        if not _driver(sid)
    ]
    return layout(steps)


def _summary(run: RunState) -> dict[str, Any]:
    return {
        "run_id": run.run_id,
        "workflow": run.workflow,
        "status": run.status,
        "updated": when(run.updated),
        "idle": None if run.status != "active" else span(time.time() - run.updated),
        "history": len(run.history),
        "graph": run_graph(run),
    }


async def tab(engine: Engine | None, owner: str, runs_shown: int = 5) -> dict[str, Any]:
    if engine is None:
        return {"enabled": False, "workflows": [], "problems": []}
    workflows, problems = engine.library.all()
    shown = []
    for w in workflows:
        runs = (await engine.store.runs(owner, w.name))[:runs_shown]
        shown.append(
            {
                "name": w.name,
                "version": w.version,
                "description": w.description,
                "graph": workflow_graph(engine, w),
                "runs": [_summary(run) for run in runs],
            }
        )
    return {"enabled": True, "workflows": shown, "problems": [str(p) for p in problems]}


async def run(engine: Engine | None, owner: str, workflow: str, run_id: str) -> dict[str, Any] | None:
    """One of the owner's runs opened, or None (no such run of theirs, or Think is off)."""
    if engine is None:
        return None
    try:
        state = await engine.run_of(owner, workflow, run_id)
    except GatewayError:
        return None
    try:
        check = await Operations(engine).debug(owner, tools.Debug(workflow=workflow, run_id=run_id, action="replay"))
    except GatewayError as exc:  # the workflow file gone or broken since the run: said, not a failed page
        check = {"identical": None, "error": str(exc), "steps": [], "status_changes": {}}
    check = check.get("current_file") or check  # the run keeps its version; an edit of the file since shows here
    own = {name: record for name, record in state.captures.items() if not _driver(str(record.get("step_id", "")))}
    captures = [
        {
            "name": name,
            "step_id": record.get("step_id"),
            "bytes": record.get("original_size"),
            "truncated": bool(record.get("truncated")),
            "preview": _preview(record.get("content")),
        }
        for name, record in list(own.items())[:MAX_CAPTURES]
    ]
    history = [
        {
            "at": time.strftime("%H:%M:%S", time.localtime(h.at)),
            "event": h.event,
            "step_id": h.step_id,
            "bytes": h.bytes,
            "detail": h.detail,
        }
        for h in state.history[-MAX_HISTORY:]
    ]
    differing = [s for s in check.get("steps", []) if not s.get("same", True)]
    return {
        "run": _summary(state),
        "captures": captures,
        "captures_total": len(own),
        "history": history,
        "history_total": len(state.history),
        "replay": {
            "identical": check.get("identical"),
            "error": check.get("error"),
            "checked": len(check.get("steps", [])),
            "differing": [{"step_id": s["step_id"], "why": s.get("why", "")} for s in differing],
            "status_changes": check.get("status_changes", {}),
        },
    }


def _preview(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + f"… ({len(text) - PREVIEW_CHARS:,} more)"
