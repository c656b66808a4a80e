"""Policy by identity or group: allow/deny globs over everything a server offers, and read-only mode for tools.

A rule is matched against a `Subject`: a tool, prompt, resource or resource template, by both of its names,
the exposed one (`gitlab.get_mr`, shortened when long; a resource's exposed URI) and its reference name
`<server>.<own name>` (a resource's: `<server>.<own URI>`), so a glob never misses what shortening or
`prefix: false` renamed. The rules that apply to an identity are those naming it (glob on its name) or one of
its groups, plus those naming nobody (they apply to everyone):

* a `deny` glob of any applying rule that matches either name refuses it;
* when applying rules have `allow` lists, it must match one of them (lists add up, like groups);
* `read_only: true` on any applying rule refuses tools not annotated `readOnlyHint`, or `destructiveHint`
  (prompts, resources, completion and subscriptions only read).

The gateway's own servers (`gateway`, `think`, `prompt`) are outside allow lists and read-only mode (the Think
loop and paging spilled results must keep working); a `deny` glob can still name their tools.

Where it applies, once each, by construction: a tool is resolved only by the session's exposure view
(`gateway.middleware.exposure`), whose policy hook decides its listing, search, find_tools' server names,
closest-name suggestions and every call that names it (directly, through `gateway.call_tool`, or the own tools
themselves); `PolicyCheck` decides everything else a server offers (listing, reading, getting, completion,
subscribing), and `fronts.relayed` asks the same `Policy` for a 2026-era stream's resource subscriptions.
"""

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import TypeVar

import mcp.types as types

from gateway.config import PolicyConfig
from gateway.errors import GatewayError, UnknownName
from gateway.pipeline import Call, Middleware
from gateway.routing.catalog import Catalog, Entry
from gateway.routing.rename import reference
from gateway.session import Identity

OWN_SERVERS = frozenset({"gateway", "think", "prompt"})
T = TypeVar("T")
Denial = Callable[[Identity, "Subject"], GatewayError | None]
"""Why an identity may not see or use a subject (None: it may): `Policy.denial` of the policy in force."""


@dataclass(frozen=True, slots=True)
class Subject:
    """One thing a server offers, as rules see it."""

    kind: str
    """"tool", "prompt", "resource" or "resource template"."""
    server: str
    exposed: str
    """The registry's name for it (a resource's exposed URI)."""
    original: str
    """The server's own name (a resource's own URI)."""
    tool: types.Tool | None = None
    """A tool's definition: its annotations decide read-only mode."""

    @classmethod
    def of(cls, entry: Entry) -> "Subject":
        if isinstance(entry.item, types.Tool):
            return cls("tool", entry.server, entry.exposed, entry.original, entry.item)
        return cls("prompt", entry.server, entry.exposed, entry.original)

    @property
    def names(self) -> tuple[str, ...]:
        full = reference(self.server, self.original)
        return (self.exposed,) if full == self.exposed else (self.exposed, full)


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    identities: tuple[str, ...] = ()
    """Globs over identity names; with `groups` empty too, the rule applies to everyone."""
    groups: tuple[str, ...] = ()
    allow: tuple[str, ...] | None = None
    deny: tuple[str, ...] = ()
    read_only: bool = False

    def applies_to(self, identity: Identity) -> bool:
        if not self.identities and not self.groups:
            return True
        return any(fnmatchcase(identity.name, g) for g in self.identities) or not identity.groups.isdisjoint(
            self.groups
        )


class PolicyDenied(GatewayError):
    code = types.INVALID_PARAMS

    def __init__(self, subject: Subject, identity: Identity, rule: str, why: str) -> None:
        self.subject, self.rule, self.why = subject, rule, why
        super().__init__(
            f"{subject.kind.capitalize()} {subject.exposed!r} is not available to {identity.name}: {why} "
            f"(policy rule {rule!r}). Use another {subject.kind}, or ask the gateway's administrator to change "
            "`policy.rules`."
        )


def is_read_only(tool: types.Tool | None) -> bool:
    notes = None if tool is None else tool.annotations
    return notes is not None and notes.read_only_hint is True and notes.destructive_hint is not True


def _matching(globs: Iterable[str], names: tuple[str, ...]) -> tuple[str, str] | None:
    """The first (glob, name) that match."""
    return next(((g, n) for g in globs for n in names if fnmatchcase(n, g)), None)


class Policy:
    def __init__(self, rules: Iterable[Rule]) -> None:
        self.rules = list(rules)

    def __bool__(self) -> bool:
        return bool(self.rules)

    def denial(self, identity: Identity, subject: Subject) -> PolicyDenied | None:
        """Why `identity` may not see or use `subject` (None: it may)."""
        applying = [rule for rule in self.rules if rule.applies_to(identity)]
        names = subject.names
        for rule in applying:
            hit = _matching(rule.deny, names)
            if hit is not None:
                glob, name = hit
                # Said by parts: the gateway renders full names in each session's names, which may be the short one.
                on = (
                    ""
                    if name == subject.exposed
                    else f" (matched on server {subject.server!r}'s name {subject.original!r})"
                )
                return PolicyDenied(subject, identity, rule.name, f"denied by {glob!r}{on}")
        if subject.server in OWN_SERVERS:
            return None
        allowing = [rule for rule in applying if rule.allow is not None]
        if allowing and not any(_matching(rule.allow or (), names) for rule in allowing):
            return PolicyDenied(subject, identity, ", ".join(r.name for r in allowing), "it matches no allow list")
        strict = next((rule for rule in applying if rule.read_only), None)
        if strict is not None and subject.kind == "tool" and not is_read_only(subject.tool):
            return PolicyDenied(subject, identity, strict.name, "read-only mode, and it is not annotated readOnlyHint")
        return None


class Subjects:
    """What a request, a listed item or a suggested name stands for (None: nothing any server offers)."""

    def __init__(self, catalog: Callable[[Call], Awaitable[Catalog]], owner: Callable[[str], tuple[str, str] | None]):
        self.catalog = catalog
        """The catalog as a call's caller sees it (`Registry.view`: with their own processes' prompts)."""
        self.owner = owner
        """An exposed URI's (server, own URI) (`Uris.owner`)."""

    async def prompt(self, name: str, call: Call) -> Subject | None:
        entry = (await self.catalog(call)).prompts.get(name)
        return None if entry is None else Subject.of(entry)

    def resource(self, uri: str, kind: str = "resource") -> Subject | None:
        owner = self.owner(uri)
        return None if owner is None else Subject(kind, owner[0], uri, owner[1])

    async def of_request(self, call: Call) -> Subject | None:
        """What a read, a get, a completion or a subscription names."""
        match call.method, call.params:
            case "prompts/get", {"name": str(name)}:
                return await self.prompt(name, call)
            case "resources/read" | "resources/subscribe", {"uri": str(uri)}:
                return self.resource(uri)
            case "completion/complete", {"ref": {"type": "ref/prompt", "name": str(name)}}:
                return await self.prompt(name, call)
            case "completion/complete", {"ref": {"type": "ref/resource", "uri": str(uri)}}:
                return self.resource(uri, "resource template")
        return None


class PolicyCheck(Middleware):
    """The policy for what a server offers besides tools: a refused request names its rule; listings and the
    closest names an unknown-name error suggests hold only what the caller may see."""

    name = "policy"
    methods = frozenset(
        {
            "prompts/list",
            "prompts/get",
            "resources/list",
            "resources/templates/list",
            "resources/read",
            "resources/subscribe",
            "completion/complete",
        }
    )

    def __init__(self, policy: Policy, subjects: Subjects) -> None:
        self.policy = policy
        self.subjects = subjects

    async def on_request(self, call: Call) -> None:
        subject = await self.subjects.of_request(call)
        denial = None if subject is None else self.policy.denial(call.session.identity, subject)
        if denial is not None:  # a name no server owns goes on: the forward says so, with the closest names
            call.refused_by = "policy"
            raise denial

    async def on_response(self, call: Call) -> None:
        identity, result = call.session.identity, call.result
        resource, template = self.subjects.resource, self._template

        def shown(items: list[T], subject: Callable[[T], Subject | None]) -> list[T]:
            # No subject: its server went with a reload since the listing was made; not shown, as it is gone.
            return [i for i in items if (s := subject(i)) is not None and self.policy.denial(identity, s) is None]

        if isinstance(result, types.ListResourcesResult):
            call.result = result.model_copy(update={"resources": shown(result.resources, lambda r: resource(r.uri))})
        elif isinstance(result, types.ListResourceTemplatesResult):
            call.result = result.model_copy(update={"resource_templates": shown(result.resource_templates, template)})
        elif isinstance(result, types.ListPromptsResult):
            entries = (await self.subjects.catalog(call)).prompts
            prompts = shown(result.prompts, lambda p: Subject.of(entries[p.name]) if p.name in entries else None)
            call.result = result.model_copy(update={"prompts": prompts})
        elif isinstance(call.error, UnknownName) and call.error.closest:
            await self._suggest(call, call.error)

    def _template(self, template: types.ResourceTemplate) -> Subject | None:
        return self.subjects.resource(template.uri_template, "resource template")

    async def _suggest(self, call: Call, error: UnknownName) -> None:
        """The closest names of an unknown prompt or resource, less those the caller may not see."""
        identity, kept = call.session.identity, []
        for name in error.closest:
            subject = await self.subjects.prompt(name, call) if error.kind == "prompt" else self.subjects.resource(name)
            if subject is not None and self.policy.denial(identity, subject) is None:
                kept.append(name)
        if kept != error.closest:
            call.error = UnknownName(error.kind, error.name, kept)


def from_config(config: PolicyConfig) -> Policy:
    rules = [
        Rule(
            rule.name or f"policy.rules[{i}]",
            tuple(rule.identities),
            tuple(rule.groups),
            None if rule.allow is None else tuple(rule.allow),
            tuple(rule.deny),
            rule.read_only,
        )
        for i, rule in enumerate(config.rules)
    ]
    return Policy(rules)
