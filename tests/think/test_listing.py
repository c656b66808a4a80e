"""think.workflows.list modes (seed list-workflows-context-optimization), the workflow:// resources' bodies, and
the shipped workflows (they parse, build as graphs, name real tools and existing success schemas)."""

import json
import logging
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from bench.workflow_list import write_library
from gateway.think.errors import ThinkError
from gateway.think.graph import build, inject_driver
from gateway.think.library import Library
from gateway.think.listing import (
    DESCRIPTION_LIMIT,
    NO_INPUTS,
    input_schema,
    input_summary,
    list_workflows,
    metadata,
    truncate_description,
)
from gateway.think.templates import Templates
from gateway.think.workflow import Step, Workflow, client_side

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / "workflows"
SCHEMAS = WORKFLOWS / "schemas"
SHIPPED = {"review_local_v1", "code_review_v1", "develop_ticket_v1"}
LONG = (
    "Comprehensive Python CI pipeline with testing, linting, coverage reporting and conditional deployment "
    "to staging and production, plus release notes and a changelog entry for every tagged version."
)


def wf(name: str, description: str = "Short one.", tags: tuple[str, ...] = (), **extra: Any) -> Workflow:
    inputs = extra.pop("inputs", {})
    return Workflow(
        name=name,
        version=extra.pop("version", "1.0"),
        steps=(Step(id="s1", call="prompt.say"), Step(id="s2", call="git.git_status", when="params.x")),
        description=description,
        tags=tags,
        author="me",
        inputs=inputs,
        outputs={"report": "{{ s }}"},
        driver_version="stable-2025-11",
        **extra,
    )


CI = wf(
    "python-ci",
    LONG,
    ("python", "ci", "testing"),
    inputs={
        "project_path": {"type": "string", "description": "Project root", "required": True},
        "python_version": {"type": "string", "description": "Python version", "default": "3.12"},
        "environment": {"type": "string", "description": "Where to", "enum": ["dev", "prod"], "default": "dev"},
    },
)
DOCS = wf("docs-build", "Build the docs.", ("docs", "python"))
LINT = wf("aaa-lint", "Run ruff on the CI runner.", ("python", "quality"))
LIBRARY = [CI, DOCS, LINT]


def test_compact_is_the_default_with_summary_fields_and_seed_003s_names_only() -> None:
    answer = list_workflows(LIBRARY)
    assert answer["mode"] == "compact" and answer["count"] == 3 and "warnings" not in answer
    assert [w["name"] for w in answer["workflows"]] == ["aaa-lint", "docs-build", "python-ci"]
    entry = answer["workflows"][2]
    assert set(entry) == {"name", "description", "tags", "input_summary", "id", "version", "desc"}
    assert (entry["id"], entry["desc"]) == (entry["name"], entry["description"])
    # a call naming the mode (the listing seed's) gets exactly its fields
    assert set(list_workflows(LIBRARY, mode="compact")["workflows"][2]) == {
        "name",
        "description",
        "tags",
        "input_summary",
    }
    assert entry["tags"] == ["python", "ci", "testing"]
    assert entry["input_summary"] == (
        "environment (string, optional), project_path (string, required), python_version (string, optional)"
    )
    assert answer["workflows"][0]["input_summary"] == NO_INPUTS


def test_compact_cuts_the_description_at_a_word_boundary() -> None:
    cut = list_workflows([CI])["workflows"][0]["description"]
    assert len(LONG) > DESCRIPTION_LIMIT
    assert cut.endswith("...") and len(cut) <= DESCRIPTION_LIMIT + 3
    head = cut[:-3]
    assert LONG.startswith(head) and LONG[len(head)] in " ,"  # whole words only
    assert not head.endswith((" ", ","))
    assert list_workflows([DOCS])["workflows"][0]["description"] == "Build the docs."  # short: unchanged, no "..."


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("word " * 40, ("word " * 30).strip() + "..."),  # the partial 31st word goes
        ("a" * 150 + " tail", "a" * 150 + "..."),  # a word ending right at the limit stays whole
        ("x" * 200, "x" * 150 + "..."),  # one over-long word is cut hard
        ("a" * 150, "a" * 150),  # exactly the limit: unchanged
        ("  spaced\n out  ", "spaced out"),
    ],
)
def test_truncate_description_edges(text: str, expected: str) -> None:
    assert truncate_description(text) == expected


def test_standard_has_the_full_description_and_the_input_summary() -> None:
    entry = list_workflows([CI], mode="standard")["workflows"][0]
    assert set(entry) == {"name", "description", "tags", "input_summary"}
    assert entry["description"] == LONG
    assert entry["input_summary"] == input_summary(CI)


def test_detailed_has_version_author_full_inputs_and_outputs() -> None:
    entry = list_workflows([CI], mode="detailed")["workflows"][0]
    assert set(entry) == {"name", "description", "tags", "version", "author", "inputs", "outputs"}
    assert entry["version"] == "1.0" and entry["author"] == "me" and entry["outputs"] == {"report": "{{ s }}"}
    assert list(entry["inputs"]) == ["project_path", "python_version", "environment"]  # as defined
    assert entry["inputs"]["project_path"] == {
        "type": "string",
        "description": "Project root",
        "required": True,
        "default": None,
    }
    assert entry["inputs"]["environment"]["enum"] == ["dev", "prod"]
    assert entry["inputs"]["python_version"]["required"] is False


def test_compact_is_much_smaller_than_detailed() -> None:
    sizes = {m: len(json.dumps(list_workflows(LIBRARY, mode=m))) for m in ("compact", "standard", "detailed")}
    assert sizes["compact"] < sizes["standard"] < sizes["detailed"]


def names(answer: dict[str, Any]) -> list[str]:
    return [w["name"] for w in answer["workflows"]]


def test_tags_use_and_semantics() -> None:
    assert names(list_workflows(LIBRARY, tags=["python"])) == ["aaa-lint", "docs-build", "python-ci"]
    assert names(list_workflows(LIBRARY, tags=["python", "ci"])) == ["python-ci"]
    assert names(list_workflows(LIBRARY, tags=["Python", "DOCS"])) == ["docs-build"]
    assert list_workflows(LIBRARY, tags=["docs", "ci"]) == {"workflows": [], "count": 0, "mode": "compact"}
    assert list_workflows(LIBRARY, tags=[])["count"] == 3


def test_filter_matches_name_or_description_case_insensitively() -> None:
    assert names(list_workflows(LIBRARY, filter="DOCS")) == ["docs-build"]
    # "ci" is in python-ci's name and in aaa-lint's description ("CI runner")
    assert names(list_workflows(LIBRARY, filter="ci")) == ["aaa-lint", "python-ci"]
    assert list_workflows(LIBRARY, filter="coverage", tags=["docs"])["count"] == 0
    assert list_workflows(LIBRARY, filter="zzz")["workflows"] == []


def test_output_is_deterministic() -> None:
    assert list_workflows(LIBRARY) == list_workflows(list(reversed(LIBRARY)))


@pytest.mark.parametrize(("detailed", "mode"), [(True, "detailed"), (False, "standard")])
def test_deprecated_detailed_still_works_and_warns(caplog: pytest.LogCaptureFixture, detailed: bool, mode: str) -> None:
    with caplog.at_level(logging.WARNING, logger="gateway.think.listing"):
        answer = list_workflows(LIBRARY, detailed=detailed)
    assert answer["mode"] == mode
    assert answer["workflows"] == list_workflows(LIBRARY, mode=mode)["workflows"]  # type: ignore[arg-type]
    assert len(answer["warnings"]) == 1 and "deprecated" in answer["warnings"][0]
    records = [r for r in caplog.records if r.name == "gateway.think.listing"]
    assert len(records) == 1 and records[0].levelno == logging.WARNING
    assert "'detailed' is deprecated" in records[0].getMessage() and "mode" in records[0].getMessage()


def test_an_explicit_mode_wins_over_detailed(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="gateway.think.listing"):
        answer = list_workflows(LIBRARY, mode="compact", detailed=True)
    assert answer["mode"] == "compact" and len(answer["warnings"]) == 2
    assert any("deprecated" in r.getMessage() for r in caplog.records)


def test_no_warning_without_detailed(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="gateway.think.listing"):
        list_workflows(LIBRARY, mode="detailed")
    assert not caplog.records


def test_unknown_mode_is_invalid_params() -> None:
    with pytest.raises(ThinkError) as caught:
        list_workflows(LIBRARY, mode="verbose")  # type: ignore[arg-type]
    assert caught.value.error_code == "INVALID_PARAMS" and "compact" in caught.value.details


def test_metadata_is_the_detailed_entry_plus_steps() -> None:
    body = metadata(CI)
    detailed = list_workflows([CI], mode="detailed")["workflows"][0]
    assert {k: body[k] for k in detailed} == detailed
    assert body["step_count"] == 2 and body["driver_version"] == "stable-2025-11"
    assert body["steps"] == [
        {"id": "s1", "call": "prompt.say"},
        {"id": "s2", "call": "git.git_status", "when": "params.x"},
    ]
    assert body["input_summary"] == input_summary(CI)
    json.dumps(body)  # resource bodies are JSON


def test_input_schema_validates_plan_params() -> None:
    schema = input_schema(CI)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object" and schema["required"] == ["project_path"]
    assert schema["properties"]["python_version"] == {
        "type": "string",
        "description": "Python version",
        "default": "3.12",
    }
    validator = jsonschema.Draft202012Validator(schema)
    assert validator.is_valid({"project_path": "/src", "environment": "prod"})
    assert not validator.is_valid({"environment": "prod"})  # required missing
    assert not validator.is_valid({"project_path": "/src", "environment": "qa"})  # not in the enum
    assert not validator.is_valid({"project_path": "/src", "typo": 1})  # think.plan refuses undeclared params too
    assert input_schema(DOCS)["properties"] == {} and input_schema(DOCS)["required"] == []


# -- the shipped workflows ----------------------------------------------------------------------

# Tool names as the servers register them (mcp-server-git; mcp-gitlab 0.21.2; mcp-atlassian 0.23.1, whose
# Jira tools are mounted under the `jira_` prefix), exposed by the gateway as `<server>.<tool>`.
KNOWN_TOOLS = {
    "git.git_status",
    "git.git_diff",
    "git.git_log",
    "git.git_branch",
    "gitlab.gitlab_get_mr",
    "gitlab.gitlab_mr_changes",
    "gitlab.gitlab_list_mr_discussions",
    "gitlab.gitlab_list_mr_pipelines",
    "gitlab.gitlab_add_mr_note",
    "gitlab.gitlab_approve_mr",
    "gitlab.gitlab_create_branch",
    "gitlab.gitlab_create_mr",
    "jira.jira_get_issue",
    "jira.jira_transition_issue",
    "jira.jira_create_remote_issue_link",
    "jira.jira_add_comment",
}


@pytest.fixture(scope="module")
def shipped() -> list[Workflow]:
    good, bad = Library([WORKFLOWS]).all()
    assert not bad, [e.body() for e in bad]
    assert SHIPPED <= {w.name for w in good}
    return [w for w in good if w.name in SHIPPED]


def test_shipped_workflows_are_complete(shipped: list[Workflow]) -> None:
    for workflow in shipped:
        assert workflow.description and workflow.tags and workflow.author and workflow.outputs and workflow.limits
        assert workflow.driver_version == "stable-2025-11"
        assert all(decl.get("description") for decl in workflow.inputs.values()), workflow.name
        assert all(step.rationale for step in workflow.steps), workflow.name
        assert all(step.success_schema is not None for step in workflow.steps), workflow.name
    assert any(step.foreach for w in shipped for step in w.steps)
    assert any(step.when for w in shipped for step in w.steps)


def test_shipped_workflows_reference_existing_valid_schemas(shipped: list[Workflow]) -> None:
    for workflow in shipped:
        for step in workflow.steps:
            schema = step.success_schema
            if isinstance(schema, str):
                path = SCHEMAS / f"{schema}.json"
                assert path.is_file(), f"{workflow.name}.{step.id}: no {path}"
                schema = json.loads(path.read_text(encoding="utf-8"))
            assert isinstance(schema, dict)
            assert schema.get("$schema", "").endswith("2020-12/schema")
            jsonschema.Draft202012Validator.check_schema(schema)


def test_shipped_workflows_build_and_name_real_tools(shipped: list[Workflow]) -> None:
    templates = Templates()
    for workflow in shipped:
        graph = build(inject_driver(workflow, "stable-2025-11"), templates, KNOWN_TOOLS)
        assert set(workflow.inputs) <= set(input_schema(workflow)["properties"])
        for step in workflow.steps:
            assert client_side(step.call) or step.call in KNOWN_TOOLS, step.call
        assert len(graph.steps) == len(workflow.steps) + 2


def test_review_local_uses_only_the_default_config_git_tools(shipped: list[Workflow]) -> None:
    review = next(w for w in shipped if w.name == "review_local_v1")
    calls = {step.call for step in review.steps}
    assert {c for c in calls if not client_side(c)} <= {
        "git.git_status",
        "git.git_branch",
        "git.git_log",
        "git.git_diff",
    }
    assert input_schema(review)["required"] == ["repo_path"]
    assert review.inputs["base"]["default"] == "main"
    # the real git server's text results, reported as {"text": ...}, pass every git step's schema
    git_text = json.loads((SCHEMAS / "git_text.json").read_text(encoding="utf-8"))
    jsonschema.validate({"text": "Repository status:\nOn branch main\nnothing to commit"}, git_text)


def test_listing_the_shipped_library(shipped: list[Workflow]) -> None:
    answer = list_workflows(shipped, tags=["gitlab"])
    assert names(answer) == ["code_review_v1", "develop_ticket_v1"]
    assert "mr_iid (integer, required)" in answer["workflows"][0]["input_summary"]


def test_compact_is_at_least_60_percent_smaller_than_detailed_at_80_workflows(tmp_path: Path) -> None:
    """The list-workflows seed's target, on the benchmark's library of 80 realistic synthetic workflows."""
    write_library(tmp_path, 80, seed=7)
    good, bad = Library([tmp_path]).all()
    assert len(good) == 80 and not bad
    size = {m: len(json.dumps(list_workflows(good, mode=m), separators=(",", ":"))) for m in ("compact", "detailed")}
    assert 1 - size["compact"] / size["detailed"] >= 0.60, size
