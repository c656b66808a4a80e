"""A workflow checked as a graph (`think/graph.py`): deps explicit and implied by templates, the driver injected
ahead of the entry steps, and every problem collected before failing, each with its file, path and fix."""

from typing import Any

import pytest
import yaml

from gateway.think.errors import ThinkError
from gateway.think.graph import build, inject_driver
from gateway.think.templates import Templates
from gateway.think.workflow import DRIVER_ANNOUNCE, DRIVER_BOOTSTRAP, Workflow, parse

TOOLS = ["git.git_status", "git.git_diff", "git.git_log"]


def workflow(steps: str, **top: Any) -> Workflow:
    data = {"name": "w_v1", "version": "1.0", "description": "A test.", **top, "steps": yaml.safe_load(steps)}
    return parse(data, "w_v1.yaml")


def problems(flow: Workflow, known: list[str] | None = TOOLS) -> tuple[str, list[tuple[str, str, str]]]:
    with pytest.raises(ThinkError) as failed:
        build(flow, Templates(), known)
    found = [(d["error"], d["path"], d["message"]) for d in failed.value.extra["diagnostics"]]
    assert all(d["file"] == "w_v1.yaml" and d["guidance"] for d in failed.value.extra["diagnostics"])
    return failed.value.error_code, found


def test_a_template_reading_another_steps_capture_makes_it_a_dependency() -> None:
    flow = workflow(
        """
        - {id: status, call: git.git_status, capture_as: status}
        - {id: diff, call: git.git_diff, input_template: {note: "{{ status.text }}"}, capture_as: diff}
        - {id: log, call: git.git_log, deps: [status], input_template: {d: "{{ diff | length }}"}}
        """,
        outputs={"summary": "{{ diff }}"},
    )
    graph = build(flow, Templates(), TOOLS)
    assert graph.deps == {"status": (), "diff": ("status",), "log": ("status", "diff")}
    assert graph.producers == {"status": "status", "diff": "diff"}
    assert graph.reads == {"status": frozenset(), "diff": {"status"}, "log": {"diff"}, "": {"diff"}}


def test_the_driver_is_fetched_and_announced_before_the_entry_steps_unless_the_workflow_fetches_it() -> None:
    flow = workflow("- {id: status, call: git.git_status}\n- {id: log, call: git.git_log, deps: [status]}")
    graph = build(inject_driver(flow, "stable-2025-11"), Templates(), TOOLS)
    assert list(graph.steps)[:2] == [DRIVER_BOOTSTRAP, DRIVER_ANNOUNCE]
    assert graph.deps["status"] == (DRIVER_ANNOUNCE,)
    assert graph.deps["log"] == ("status",)  # only the entry steps wait for the announcement
    own = workflow("- {id: driver, call: think.driver_prompt}\n- {id: status, call: git.git_status}")
    assert inject_driver(own, "stable-2025-11") is own


def test_every_problem_is_reported_at_once_the_first_ones_code_leading() -> None:
    flow = workflow(
        """
        - {id: a, call: git.git_stauts, deps: [nowhere]}
        - {id: b, call: prompt.say, input_template: {t: "{{ item }}"}}
        - {id: c, call: prompt.say, input_template: {t: "{{ ghost }}"}}
        """,
        inputs={"repo": {"type": "string"}},
    )
    code, found = problems(flow)
    assert code == "UNKNOWN_STEP"
    assert [(error, path) for error, path, _ in found] == [
        ("UNKNOWN_STEP", "steps[0].deps"),
        ("UNRESOLVED_VAR", "steps[1]"),
        ("UNRESOLVED_VAR", "steps[2]"),
        ("UNKNOWN_TOOL", "steps[0].call"),
    ]
    assert found[1][2] == "step 'b' uses 'item', which only exists in a step with `foreach`"
    assert found[3][2] == "step 'a' calls 'git.git_stauts', which no server behind the gateway offers"


def test_a_cycle_is_named_step_by_step() -> None:
    flow = workflow(
        """
        - {id: first, call: prompt.say, deps: [second]}
        - {id: second, call: prompt.say, input_template: {t: "{{ third_out }}"}}
        - {id: third, call: prompt.say, deps: [first], capture_as: third_out}
        """
    )
    code, [(error, path, message)] = problems(flow)
    assert (code, error, path) == ("CYCLIC_DEPENDENCY", "CYCLIC_DEPENDENCY", "steps")
    assert message == "steps depend on each other: first -> second -> third -> first"


def test_without_an_inputs_block_a_bare_name_is_a_param_and_tools_are_checked_only_against_a_catalog() -> None:
    flow = workflow("- {id: a, call: nowhere.tool, input_template: {path: '{{ path }}'}}")
    assert not flow.declares_inputs
    assert build(flow, Templates(), None).deps == {"a": ()}  # no catalog known yet: calls are not checked
    assert problems(flow)[0] == "UNKNOWN_TOOL"
