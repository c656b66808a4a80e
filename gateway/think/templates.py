"""Workflow templates and `when`/`foreach` expressions: sandboxed Jinja2 that reads data and never calls code."""

import json
import re
import types
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Any, TypeVar

from jinja2 import StrictUndefined, TemplateSyntaxError, Undefined, UndefinedError, meta, nodes
from jinja2.environment import TemplateExpression
from jinja2.exceptions import SecurityError, TemplateAssertionError
from jinja2.filters import FILTERS
from jinja2.parser import Parser
from jinja2.runtime import Context, LoopContext
from jinja2.sandbox import ImmutableSandboxedEnvironment

from gateway.think.errors import ThinkError
from gateway.think.outcomes import lowered

# Pure, deterministic filters only: `random` would break duplicate-safe `think.next`, and `attr`/`groupby`
# reach for Python attributes the sandbox refuses anyway.
_FILTERS = (
    "abs batch capitalize count d default dictsort first float indent int items join last length list lower map "
    "max min reject rejectattr replace reverse round select selectattr slice sort string sum title trim truncate "
    "unique upper urlencode wordcount"
).split()
_LOOP_FIELDS = frozenset({"index", "index0", "revindex", "revindex0", "first", "last", "length", "depth", "depth0"})
_SINGLE = re.compile(r"\{\{-?(.*?)-?\}\}", re.DOTALL)
_T = TypeVar("_T")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MAX_REPEAT = 100_000  # `'x' * 10**9` would exhaust memory before any timeout could fire
_MAX_EXPONENT = 100  # `10 ** 10**8` would pin a CPU for minutes


def _json(value: Any) -> Any:
    """`value` as plain JSON data; Undefined raises its StrictUndefined error, Python objects are refused."""
    if isinstance(value, Undefined):
        str(value)  # StrictUndefined raises UndefinedError with Jinja's own "'x' is undefined" message
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return str(value)  # drops Markup and other str subclasses
    if isinstance(value, Mapping):
        return {str(key): _json(item) for key, item in value.items()}
    # Filters such as `map`/`select` return generators; a workflow author means the list.
    if isinstance(value, list | tuple | types.GeneratorType):
        return [_json(item) for item in value]
    raise SecurityError(f"a {type(value).__name__} is not JSON data")


def _finalize(value: Any) -> Any:
    """How one `{{ … }}` prints inside text: containers as JSON (not Python reprs), scalars as Jinja prints them."""
    data = _json(value)
    return json.dumps(data, ensure_ascii=False) if isinstance(data, dict | list) else data


def _tojson(value: Any) -> str:
    # Jinja's own tojson HTML-escapes `<>&'`; these strings go to tools and models, not browsers.
    return json.dumps(_json(value), ensure_ascii=False, sort_keys=True)


class _Sandbox(ImmutableSandboxedEnvironment):
    """Data access only: item lookup on mappings/sequences, the loop counters, filters and tests. No calls."""

    intercepted_binops = frozenset({"*", "**"})

    def getitem(self, obj: Any, argument: Any) -> Any:
        if isinstance(obj, Undefined):
            return obj  # keep the first missing name in the message: "'mr' is undefined"
        if isinstance(obj, Mapping):
            if isinstance(argument, str) and argument in obj:
                return obj[argument]
        elif isinstance(obj, Sequence) and isinstance(argument, int | slice) and not isinstance(argument, bool):
            try:
                return obj[argument]
            except IndexError:
                pass
        elif isinstance(obj, LoopContext) and argument in _LOOP_FIELDS:
            return getattr(obj, argument)
        if isinstance(argument, str) and argument.startswith("_"):
            raise SecurityError(f"access to internal attribute {argument!r} is not allowed")
        return self.undefined(obj=obj, name=argument)

    def getattr(self, obj: Any, attribute: str) -> Any:
        # `a.b` is `a["b"]`: a Python attribute (methods, `__class__`, `mro`) is never reachable.
        return self.getitem(obj, attribute)

    def call(self, __context: Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        raise SecurityError("templates cannot call functions or methods; use filters, e.g. `x | length`")

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        if operator == "**" and isinstance(right, int | float) and abs(right) > _MAX_EXPONENT:
            raise SecurityError(f"exponent {right} is too large")
        if operator == "*":
            for seq, times in ((left, right), (right, left)):
                if isinstance(seq, str | list) and isinstance(times, int) and len(seq) * times > _MAX_REPEAT:
                    raise SecurityError(f"repetition would exceed {_MAX_REPEAT} items")
        return super().call_binop(context, operator, left, right)


def _guidance(error: Exception, context: Mapping[str, Any] | None) -> str:
    if isinstance(error, TemplateAssertionError):
        return f"Use only these filters: {', '.join(sorted({*_FILTERS, 'tojson'}))}."
    if isinstance(error, TemplateSyntaxError):
        return "Fix the Jinja2 syntax: `{{ name.field }}` in templates; a bare expression in `when`/`foreach`."
    if isinstance(error, UndefinedError):
        names = ", ".join(sorted(context)) if context is not None else "params and captures"
        return f"Reference a defined name or key (defined here: {names}), or add `| default(...)`."
    if isinstance(error, SecurityError):
        return "Templates only read data: use `a.b`, `a[0]` and filters; calls and internal attributes are refused."
    return "Fix the template expression; it must evaluate to JSON data."


class Templates:
    """Renders `input_template`s and evaluates `when`/`foreach`; every failure is `TEMPLATE_RENDER_ERROR`."""

    def __init__(self) -> None:
        self._env = _Sandbox(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)
        self._env.globals.clear()  # range, lipsum, cycler, joiner, namespace, dict: callables we never want
        self._env.filters = {name: FILTERS[name] for name in _FILTERS} | {"tojson": _tojson}
        self._env.finalize = _finalize
        # Workflows render the same few templates at every step; compiling dominates the cost.
        self._template = lru_cache(maxsize=1024)(self._env.from_string)
        self._expression = lru_cache(maxsize=1024)(self._compile_expression)

    def render(self, template: Any, context: Mapping[str, Any], where: str) -> Any:
        """Render dict values, list items and strings; `"{{ expr }}"` alone keeps the value's JSON type."""
        if isinstance(template, Mapping):
            return {key: self.render(value, context, _child(where, key)) for key, value in template.items()}
        if isinstance(template, list):
            return [self.render(value, context, f"{where}[{index}]") for index, value in enumerate(template)]
        if not isinstance(template, str) or not _has_markup(template):
            return template
        single = _SINGLE.fullmatch(template.strip())
        if single is not None:
            try:
                expression = self._expression(single.group(1))
            except TemplateSyntaxError:
                pass  # e.g. "{{ a }} and {{ b }}": not one expression, so render as text below
            else:
                return self._guard(lambda: _json(expression(dict(context))), template, context, where)
        return self._guard(lambda: self._template(template).render(dict(context)), template, context, where)

    def evaluate(self, expression: str, context: Mapping[str, Any], where: str) -> Any:
        """The JSON value of an expression, bare (`params.run_tests and lint.offenses > 0`) or the seeds' form
        wrapped in one `{{ … }}` (`"{{ params.pr_ids }}"`)."""
        bare = self.bare(expression, where)
        return self._guard(lambda: _json(self._expression(bare)(dict(context))), expression, context, where)

    def bare(self, expression: str, where: str = "expression") -> str:
        """`expression` without its one optional `{{ … }}` wrapper, its outcome tests lowered (`failed(x)`: see
        `gateway.think.outcomes`).

        Raises:
            ThinkError: TEMPLATE_RENDER_ERROR for anything else with template markup (text around the braces,
                two `{{ }}`, `{% %}`): a `when`/`foreach` is one expression, so mixing forms has no meaning.
        """
        text = expression.strip()
        single = _SINGLE.fullmatch(text)
        if single is not None and "{{" not in single.group(1) and "}}" not in single.group(1):
            return lowered(single.group(1))
        if _has_markup(text) or "}}" in text:
            raise ThinkError(
                "TEMPLATE_RENDER_ERROR",
                f"{where}: {expression!r} mixes an expression with template text",
                "A when/foreach is one expression: write it bare (`params.files`) or wrapped in exactly one "
                '`{{ … }}` (`"{{ params.files }}"`), with nothing around it.',
            )
        return lowered(expression)

    def references(self, template: Any) -> set[str]:
        """Root names a template reads anywhere inside it, e.g. `{"q": "{{ mr.title }}"}` → `{"mr"}`."""
        if isinstance(template, Mapping):
            return set().union(*(self.references(value) for value in template.values()))
        if isinstance(template, list):
            return set().union(*(self.references(value) for value in template))
        if not isinstance(template, str) or not _has_markup(template):
            return set()
        # Names a template sets itself (`{% for f in files %}`, `{% set %}`) are not references.
        return self._guard(lambda: set(meta.find_undeclared_variables(self._env.parse(template))), template)

    def expression_references(self, expression: str, where: str = "expression") -> set[str]:
        """Root names an expression (bare or in one `{{ … }}`) reads; Jinja expressions bind nothing, so every
        Name is one."""
        bare = self.bare(expression, where)
        tree = self._guard(lambda: self._parse_expression(bare), expression, where=where)
        return {name.name for name in tree.find_all(nodes.Name)}

    def tree(self, template: str) -> nodes.Template:
        """The parsed template (it parsed when the graph was built)."""
        return self._guard(lambda: self._env.parse(template), template)

    def undeclared(self, tree: nodes.Template) -> set[str]:
        """Root names the template reads but does not set itself."""
        return set(meta.find_undeclared_variables(tree))

    def expression_tree(self, expression: str) -> nodes.Expr:
        """The parsed expression of a `when`/`foreach` (bare or in one `{{ … }}`)."""
        return self._guard(lambda: self._parse_expression(self.bare(expression)), expression)

    def _parse_expression(self, source: str) -> nodes.Expr:
        parser = Parser(self._env, source, state="variable")
        tree = parser.parse_expression()
        if not parser.stream.eos:  # "a }} {{ b" must not pass as one expression
            raise TemplateSyntaxError("unexpected text after the expression", parser.stream.current.lineno)
        return tree

    def _compile_expression(self, source: str) -> TemplateExpression:
        # Undefined must surface as StrictUndefined's error, not quietly become None.
        return self._env.compile_expression(source, undefined_to_none=False)

    def _guard(
        self, action: Callable[[], _T], source: str, context: Mapping[str, Any] | None = None, where: str = "template"
    ) -> _T:
        try:
            return action()
        except ThinkError:
            raise
        except Exception as error:  # a workflow's template is user input: any failure is its author's to fix
            snippet = source if len(source) <= 200 else source[:197] + "..."
            problem = " ".join(str(error).split())  # syntax errors append "\n  line 1"
            details = f"{where}: {type(error).__name__}: {problem} (in {snippet!r})"
            raise ThinkError("TEMPLATE_RENDER_ERROR", details, _guidance(error, context)) from error


def _has_markup(text: str) -> bool:
    return "{{" in text or "{%" in text or "{#" in text


def _child(where: str, key: Any) -> str:
    return f"{where}.{key}" if isinstance(key, str) and _IDENTIFIER.fullmatch(key) else f"{where}[{key!r}]"
