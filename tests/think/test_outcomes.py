"""Outcome tests (`think/outcomes.py`): `failed(x)`, `succeeded(x)` and `always()` lowered to what templates can
evaluate, and checked at plan (the tested step exists and is upstream; retry only where the gateway sees a call)."""

from gateway.think import outcomes
from gateway.think.graph import build
from gateway.think.outcomes import OUTCOMES, aware, lowered  # not `tested`: pytest would collect it
from gateway.think.templates import Templates
from tests.think.test_graph import TOOLS, problems, workflow


def test_outcome_tests_are_lowered_to_a_look_up_of_the_runs_outcomes_whatever_their_quoting() -> None:
    expression = "failed(status) or succeeded('log') and not failed( \"diff\" ) or always()"
    assert lowered(expression) == (
        f"({OUTCOMES}['status'] == 'failed') or ({OUTCOMES}['log'] == 'succeeded') and not "
        f"({OUTCOMES}['diff'] == 'failed') or true"
    )
    assert outcomes.tested(expression) == ["status", "log", "diff"]
    assert outcomes.tested("failed(a) or failed(a)") == ["a"] and outcomes.tested(None) == []
    assert aware("always()") and aware("params.x and succeeded(a)")
    assert not aware("params.failed") and not aware(None)  # a name, not a test


def test_outcome_tests_must_name_a_step_upstream_and_retry_only_a_call_the_gateway_sees() -> None:
    flow = workflow(
        """
        - {id: status, call: git.git_status, retry: {attempts: 2}}
        - {id: diff, call: git.git_diff, deps: [status], when: "failed(status) or succeeded('log')"}
        - {id: log, call: git.git_log, when: "failed(nothing)"}
        - {id: ask, call: local.ask, continue_on_error: true}
        """
    )
    code, found = problems(flow)
    assert code == "STEP_NOT_UPSTREAM"
    assert found == [
        (
            "STEP_NOT_UPSTREAM",
            "steps[1].when",
            "step 'diff' tests the outcome of 'log', which is not upstream of it: 'diff' could be decided before "
            "'log' has an outcome",
        ),
        ("UNKNOWN_STEP", "steps[2].when", "step 'log' tests the outcome of 'nothing', which is not a step of w_v1"),
        (
            "YAML_SCHEMA_VIOLATION",
            "steps[3]",
            "step 'ask' has retry/continue_on_error but calls 'local.ask', which the client does itself: the "
            "gateway never sees it fail",
        ),
    ]


def test_an_outcome_test_of_a_transitive_dependency_is_upstream() -> None:
    flow = workflow(
        """
        - {id: status, call: git.git_status}
        - {id: diff, call: git.git_diff, deps: [status]}
        - {id: log, call: git.git_log, deps: [diff], when: "failed(status) or always()"}
        """
    )
    assert build(flow, Templates(), TOOLS).deps["log"] == ("diff",)
