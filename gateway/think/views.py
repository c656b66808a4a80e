"""Views of workflows and runs for authors: the step graph, the replay of a finished run, and the migration of a
run to a newer version of its workflow (think.reset migrate).

`graph_view` is what `think.explain` answers without a run (or with `view: "graph"`): every node with its
call, deps, capture, `when`/`foreach` markers, the entry steps and one valid order. `replay` re-runs a run's
state machine from scratch on the captures it recorded, step by step in the order the steps completed, and
reports where the replay differs (a step not ready, another input, another skip or expansion, other
artifacts). The engine is deterministic, so a replay of an unchanged workflow is identical; a difference
means the workflow file (or a schema or the driver) changed since the run.
"""

from typing import Any

from gateway.think import retention, runner
from gateway.think.context import Limits
from gateway.think.graph import Graph
from gateway.think.state import RunState, StepState
from gateway.think.templates import Templates


def graph_view(graph: Graph) -> dict[str, Any]:
    """Nodes (call, deps, capture_as, when, foreach, entry), entry steps, and a topological order."""
    nodes = [
        {
            "step_id": sid,
            "call": step.call,
            "deps": list(graph.deps[sid]),
            "capture_as": step.capture_as,
            "when": step.when,
            "foreach": step.foreach,
            "entry": not graph.deps[sid],
            **({"retry": {"attempts": step.retry.attempts}} if step.retry else {}),
            **({"continue_on_error": True} if step.continue_on_error else {}),
        }
        for sid, step in graph.steps.items()
    ]
    return {
        "workflow": graph.workflow.name,
        "file": graph.workflow.source,
        "description": graph.workflow.description,
        "inputs": sorted(graph.workflow.inputs) if graph.workflow.declares_inputs else "free-form",
        "entry": [n["step_id"] for n in nodes if n["entry"]],
        "order": _order(graph),
        "nodes": nodes,
    }


def _order(graph: Graph) -> list[str]:
    """Kahn's order, ties in file order (the graph was checked acyclic when built)."""
    done: list[str] = []
    left = list(graph.steps)
    while left:
        ready = next(s for s in left if all(d in done for d in graph.deps[s]))
        done.append(ready)
        left.remove(ready)
    return done


def replay(state: RunState, graph: Graph, templates: Templates, limits: Limits) -> dict[str, Any]:
    """Replay `state` (a finished or partial run) on its own captures; `identical` says whether it matched."""
    fresh = RunState(
        workflow=state.workflow,
        run_id=state.run_id,
        params=state.params,
        driver=state.driver,
        steps=runner.new_steps(graph),
    )
    fresh.share_spills(state.spills)  # the captures copied below read their whole values from it
    gone = retention.evicted(state, graph)  # left the state after their last reader: read from their spills
    runner.advance(fresh, graph, templates)
    completed = sorted(
        (sid for sid, st in state.steps.items() if st.status in ("done", "failed")),
        key=lambda s: state.steps[s].completed_at or 0,
    )
    steps: list[dict[str, Any]] = []
    for sid in completed:
        original = state.steps[sid]
        if sid not in runner.ready(fresh):
            steps.append(
                {"step_id": sid, "same": False, "why": f"not ready in the replay (ready: {runner.ready(fresh)})"}
            )
            break
        runner.instruction(fresh, graph, templates, sid, limits)  # renders its input as think.next would
        replayed = fresh.steps[sid]
        entry: dict[str, Any] = {"step_id": sid, "same": replayed.input == original.input}
        if not entry["same"]:
            entry.update(why="another input", recorded=original.input, replayed=replayed.input)
        steps.append(entry)
        template = graph.steps[replayed.template_of or sid]
        if template.capture_as and original.status == "done":
            key = template.capture_as if replayed.index is None else f"{template.capture_as}[{replayed.index}]"
            if key in state.captures:
                fresh.captures[key] = state.captures[key]
            elif key in gone:
                fresh.captures[key] = retention.reference(state, key, gone[key])
        fresh.clock += 1
        replayed.status, replayed.result_hash, replayed.completed_at = (
            original.status,
            original.result_hash,
            fresh.clock,
        )
        replayed.attempts, replayed.error = original.attempts, original.error  # a failed one's outcome, as recorded
        runner.advance(fresh, graph, templates)
    statuses = {sid: st.status for sid, st in state.steps.items()}
    replayed_statuses = {sid: st.status for sid, st in fresh.steps.items()}
    changed = {
        sid: {"recorded": statuses.get(sid), "replayed": replayed_statuses.get(sid)}
        for sid in dict.fromkeys([*statuses, *replayed_statuses])
        if statuses.get(sid) != replayed_statuses.get(sid)
    }
    identical = all(s["same"] for s in steps) and not changed
    return {"action": "replay", "identical": identical, "steps": steps, "status_changes": changed}


def migrate(state: RunState, graph: Graph) -> dict[str, list[str]]:
    """Move `state` onto `graph` (a newer version of its workflow): steps done that it still has stay done (with
    their foreach children and captures), its new steps are pending, steps it no longer has go. Returns the ids
    kept, added and dropped. A step kept takes the new version's deps; a pending one renders its input anew."""
    old = state.steps
    fresh = runner.new_steps(graph)
    steps: dict[str, StepState] = {}
    for sid, new in fresh.items():
        kept = old.get(sid)
        if kept is None or kept.status == "pending":
            steps[sid] = new
            continue
        steps[sid] = kept.model_copy(update={"deps": new.deps, "call": new.call})
        steps.update((c, old[c]) for c in runner.children(state, sid))
    dropped = [sid for sid in old if sid not in steps]
    state.steps = steps
    bases = {st.template_of or sid for sid, st in steps.items() if st.status != "pending"}
    state.captures = {
        k: v
        for k, v in state.captures.items()
        if k.startswith("__") or str(v.get("step_id", "")).split("[", 1)[0] in bases
    }
    state.observed = {}
    state.checkpoints, state.checkpoint_chunks = [], 0  # their steps are another version's: no rollback across
    return {
        "kept": [sid for sid in steps if sid in old and steps[sid].status != "pending"],
        "added": [sid for sid in fresh if sid not in old],
        "dropped": dropped,
    }


def snapshot_of(state: RunState) -> dict[str, Any]:
    """What `think.state.get` shows (checkpoints and observations summarized, not dumped)."""
    body = state.model_dump(exclude={"checkpoints", "observed", "history"})
    body["checkpoints"] = [c.name for c in state.checkpoints]
    body["observed"] = {k: {"hash": o.hash, "bytes": o.bytes} for k, o in state.observed.items()}
    body["history"] = [h.model_dump(exclude_none=True) for h in state.history[-20:]]
    return body
