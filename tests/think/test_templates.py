"""Think templates: native JSON types, interpolation, StrictUndefined, the no-call sandbox, `when`, references."""

from typing import Any

import pytest

from gateway.think.errors import ThinkError
from gateway.think.templates import Templates

CONTEXT: dict[str, Any] = {
    "params": {"files": ["a.py", "b.py"], "count": 3, "run_tests": True, "options": {"deep": 1}, "nothing": None},
    "mr": {"title": "Fix bug", "labels": ["bug"]},
    "lint": {"offenses": 2},
    "item": {"path": "src/x.py"},
    "loop": {"index": 1},
}


@pytest.fixture
def templates() -> Templates:
    return Templates()


def render_error(templates: Templates, template: Any, where: str = "steps[2].input_template") -> ThinkError:
    with pytest.raises(ThinkError) as caught:
        templates.render(template, CONTEXT, where)
    assert caught.value.error_code == "TEMPLATE_RENDER_ERROR"
    assert caught.value.guidance
    return caught.value


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{{ params.options }}", {"deep": 1}),
        ("{{ params.files }}", ["a.py", "b.py"]),
        ("{{params.count}}", 3),
        ("{{ params.run_tests }}", True),
        ("{{ params.nothing }}", None),
        ("{{ params.files | length }}", 2),
        ("{{ params.files[0] }}", "a.py"),
        ("  {{ params.count }}\n", 3),
        ("{{- params.count -}}", 3),
        ("{{ params.files | map('upper') }}", ["A.PY", "B.PY"]),
    ],
)
def test_single_expression_template_keeps_its_json_type(templates: Templates, template: str, expected: Any) -> None:
    result = templates.render(template, CONTEXT, "t")
    assert result == expected
    assert type(result) is type(expected)


def test_mixed_text_interpolates_to_a_string_with_containers_as_json(templates: Templates) -> None:
    assert templates.render("MR: {{ mr.title }} ({{ params.count }})", CONTEXT, "t") == "MR: Fix bug (3)"
    assert templates.render("{{ item.path }}#{{ loop.index }}", CONTEXT, "t") == "src/x.py#1"
    assert templates.render("labels={{ mr.labels }}", CONTEXT, "t") == 'labels=["bug"]'
    assert templates.render("{{ params.count }} and {{ lint.offenses }}", CONTEXT, "t") == "3 and 2"


def test_nested_dicts_and_lists_render_values_and_leave_keys_and_plain_data_alone(templates: Templates) -> None:
    template = {
        "{{ mr.title }}": {"files": "{{ params.files }}", "n": 5, "flag": False, "none": None},
        "list": ["{{ item.path }}", ["x {{ lint.offenses }}"], 1.5, "plain text"],
    }
    assert templates.render(template, CONTEXT, "t") == {
        "{{ mr.title }}": {"files": ["a.py", "b.py"], "n": 5, "flag": False, "none": None},
        "list": ["src/x.py", ["x 2"], 1.5, "plain text"],
    }


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{{ params.files | join(', ') }}", "a.py, b.py"),
        ("{{ params.missing | default('none') }}", "none"),
        ("{{ mr.title | lower }}-{{ mr.title | upper }}", "fix bug-FIX BUG"),
        ("{{ params.files | first }}|{{ params.files | last }}", "a.py|b.py"),
        ("{{ params.options | tojson }}", '{"deep": 1}'),
        ("{{ '<b>&' | tojson }}", '"<b>&"'),
        ("{{ '42' | int + 1 }}", 43),
        ("{{ params.count | string }}", "3"),
        ("{{ '  x-y  ' | trim | replace('-', '+') }}", "x+y"),
        ("{% for f in params.files %}{{ loop.index }}:{{ f }} {% endfor %}", "1:a.py 2:b.py "),
        ("{% if params.missing is defined %}yes{% else %}no{% endif %}", "no"),
    ],
)
def test_workflow_filters_and_statements_work(templates: Templates, template: str, expected: Any) -> None:
    assert templates.render(template, CONTEXT, "t") == expected


def test_undefined_variable_names_where_and_the_path_inside_the_template(templates: Templates) -> None:
    error = render_error(templates, {"query": "{{ mr.title }}", "opts": ["{{ missing.x }}"]})
    assert "steps[2].input_template.opts[0]" in str(error.details)
    assert "'missing' is undefined" in str(error.details)
    assert "params" in error.guidance  # lists what is defined


def test_undefined_key_inside_text_is_an_error_naming_the_path(templates: Templates) -> None:
    error = render_error(templates, {"query": "title: {{ mr.nope }}"})
    assert str(error.details).startswith("steps[2].input_template.query:")
    assert "nope" in str(error.details)


@pytest.mark.parametrize(
    "template",
    [
        "{{ params.items() }}",
        "{{ mr.title.upper() }}",
        "{{ ''.__class__ }}",
        "{{ params.files.__class__.__mro__ }}",
        "{{ params.__class__ }}",
        "{{ item.path.__globals__ }}",
        "{{ params.mro }}",
        "{{ mr.title.format }}",
        "{{ range(10) }}",
        "{{ lipsum() }}",
        "{{ cycler }}",
        "{{ namespace }}",
        "x {{ dict(a=1) }}",
        "{{ params.files | random }}",
        "{{ params | attr('items') }}",
        "{% for f in params.files %}{{ loop.cycle('a', 'b') }}{% endfor %}",
        "{% for f in params.files %}{{ loop }}{% endfor %}",
        "{{ 'x' * 10000000 }}",
        "{{ 10 ** 100000 }}",
        "{% include 'other' %}",
    ],
)
def test_calls_internals_globals_and_non_json_values_are_rejected(templates: Templates, template: str) -> None:
    error = render_error(templates, {"q": template})
    assert "steps[2].input_template.q" in str(error.details)


def test_call_rejection_explains_that_filters_are_the_way(templates: Templates) -> None:
    error = render_error(templates, "{{ params.items() }}")
    assert "cannot call" in str(error.details)


@pytest.mark.parametrize("template", ["{{ params.count + }}", "{% if %}", "{{ mr.title }"])
def test_syntax_errors_are_template_render_errors(templates: Templates, template: str) -> None:
    error = render_error(templates, {"q": template})
    assert "TemplateSyntaxError" in str(error.details)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("params.run_tests", True),
        ("not params.run_tests", False),
        ("lint.offenses > 0", True),
        ("params.run_tests and lint.offenses > 5", False),
        ("params.count == 3 or lint.offenses > 5", True),
        ("'a.py' in params.files", True),
        ("'c.py' not in params.files", True),
        ("params.files", ["a.py", "b.py"]),
        ("params.missing is defined", False),
    ],
)
def test_when_and_foreach_expressions_evaluate_to_json_values(
    templates: Templates, expression: str, expected: Any
) -> None:
    assert templates.evaluate(expression, CONTEXT, "steps[1].when") == expected


@pytest.mark.parametrize(
    "expression",
    [
        "params.nope > 0",
        "x.items()",
        "''.__class__",
        "a +",
        "{{ a }} and b",
        "a }} {{ b",
        "{{ a }}{{ b }}",
        "{% if a %}",
    ],
)
def test_bad_expressions_are_template_render_errors_naming_where(templates: Templates, expression: str) -> None:
    with pytest.raises(ThinkError) as caught:
        templates.evaluate(expression, CONTEXT, "steps[1].when")
    assert caught.value.error_code == "TEMPLATE_RENDER_ERROR"
    assert str(caught.value.details).startswith("steps[1].when:")


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("{{ params.files }}", ["a.py", "b.py"]),
        ("{{params.run_tests}}", True),
        ("  {{- lint.offenses > 5 -}}  ", False),
        ("{{ 'a.py' in params.files }}", True),
    ],
)
def test_the_seeds_braces_form_evaluates_like_the_bare_expression(
    templates: Templates, expression: str, expected: Any
) -> None:
    assert templates.evaluate(expression, CONTEXT, "steps[1].foreach") == expected
    assert templates.expression_references(expression) <= {"params", "lint"}


def test_references_collect_root_names_across_nested_templates(templates: Templates) -> None:
    template = {
        "q": "{{ mr.title }} {{ params.x }}",
        "files": ["{% for f in diff.files %}{{ f.path }}{{ loop.index }}{% endfor %}", 3, None],
        "n": {"deep": "{{ lint.offenses | default(other) }}"},
        "plain": "no markup",
    }
    assert templates.references(template) == {"mr", "params", "diff", "lint", "other"}
    assert templates.references("literal") == set()
    assert templates.references(42) == set()


def test_references_of_an_unparseable_template_is_a_render_error(templates: Templates) -> None:
    with pytest.raises(ThinkError) as caught:
        templates.references({"q": "{{ mr.title "})
    assert caught.value.error_code == "TEMPLATE_RENDER_ERROR"


def test_expression_references_collect_every_root_name(templates: Templates) -> None:
    assert templates.expression_references("params.run_tests and lint.offenses > 0") == {"params", "lint"}
    assert templates.expression_references("item.path in diff['files'] | map(attribute='p')") == {"item", "diff"}
    assert templates.expression_references("true and 1 > 0") == set()
    with pytest.raises(ThinkError) as caught:
        templates.expression_references("a }} {{ b")
    assert caught.value.error_code == "TEMPLATE_RENDER_ERROR"


def test_rendering_is_deterministic_across_calls_and_instances(templates: Templates) -> None:
    template = {"a": "{{ params | tojson }}", "b": "{{ params.options | dictsort }}", "c": "x {{ params }}"}
    first = templates.render(template, CONTEXT, "t")
    assert all(templates.render(template, CONTEXT, "t") == first for _ in range(5))
    assert Templates().render(template, CONTEXT, "t") == first


def test_rendered_values_are_not_rendered_again(templates: Templates) -> None:
    context = {"mr": {"title": "{{ params.secret }}"}}
    assert templates.render("{{ mr.title }}", context, "t") == "{{ params.secret }}"


def test_context_names_that_clash_with_python_parameters_work(templates: Templates) -> None:
    context = {"args": {"v": 1}, "kwargs": 2, "context": 3}
    assert templates.render("{{ args.v }}-{{ kwargs }}-{{ context }}", context, "t") == "1-2-3"
    assert templates.evaluate("args.v + kwargs + context", context, "t") == 6


def test_self_is_reserved_by_jinja_and_fails_loudly_rather_than_leaking_the_template(templates: Templates) -> None:
    with pytest.raises(ThinkError) as caught:
        templates.evaluate("self", {"self": 1}, "t")
    assert caught.value.error_code == "TEMPLATE_RENDER_ERROR"
