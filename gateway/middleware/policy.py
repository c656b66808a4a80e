"""Tool policy by identity or group: allow/deny globs over exposed names and read-only mode by annotations.

Applied alike to `tools/list` (hidden tools are left out), `tools/call` (refused, naming the rule), and
to search, which asks `Policy.denial` for each candidate. The rules that apply to an identity are those
naming it (glob on its name) or one of its groups, plus those naming nobody (they apply to everyone):

* a `deny` glob of any applying rule that matches the tool refuses it;
* when applying rules have `allow` lists, the tool must match one of them (lists add up, like groups);
* `read_only: true` on any applying rule refuses tools not annotated `readOnlyHint`, or `destructiveHint`.

The gateway's own tools (`gateway.*`, `think.*`, `prompt.*`) are outside allow lists and read-only mode
(the Think loop and paging spilled results must keep working); a `deny` glob can still name them.
"""

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase

import mcp.types as types

from gateway.config import PolicyConfig
from gateway.errors import GatewayError
from gateway.pipeline import Call, Middleware
from gateway.session import Identity

OWN_SERVERS = ("gateway", "think", "prompt")
ToolLookup = Callable[[str], Awaitable[types.Tool | None]]


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

    def __init__(self, tool: str, identity: Identity, rule: str, why: str) -> None:
        self.tool, self.rule, self.why = tool, rule, why
        super().__init__(
            f"Tool {tool!r} is not available to {identity.name}: {why} (policy rule {rule!r}). "
            "Use another tool, or ask the gateway's administrator to change `policy.rules`."
        )


def is_read_only(tool: types.Tool | None) -> bool:
    notes = None if tool is None else tool.annotations
    return notes is not None and notes.read_only_hint is True and notes.destructive_hint is not True


class Policy:
    def __init__(self, rules: Iterable[Rule], *, separator: str = ".") -> None:
        self.rules = list(rules)
        self._own = tuple(f"{server}{separator}*" for server in OWN_SERVERS)

    def __bool__(self) -> bool:
        return bool(self.rules)

    def denial(self, identity: Identity, name: str, tool: types.Tool | None) -> PolicyDenied | None:
        """Why `identity` may not see or call the tool `name` (None: it may); `tool` gives its annotations."""
        applying = [rule for rule in self.rules if rule.applies_to(identity)]
        for rule in applying:
            hit = next((g for g in rule.deny if fnmatchcase(name, g)), None)
            if hit is not None:
                return PolicyDenied(name, identity, rule.name, f"denied by {hit!r}")
        if any(fnmatchcase(name, g) for g in self._own):
            return None
        allowing = [rule for rule in applying if rule.allow is not None]
        if allowing and not any(fnmatchcase(name, g) for rule in allowing for g in rule.allow or ()):
            names = ", ".join(rule.name for rule in allowing)
            return PolicyDenied(name, identity, names, "it matches no allow list")
        strict = next((rule for rule in applying if rule.read_only), None)
        if strict is not None and not is_read_only(tool):
            return PolicyDenied(name, identity, strict.name, "read-only mode, and it is not annotated readOnlyHint")
        return None

    def visible(self, identity: Identity, tools: Iterable[types.Tool]) -> list[types.Tool]:
        return [tool for tool in tools if self.denial(identity, tool.name, tool) is None]


class PolicyCheck(Middleware):
    """Refuses denied calls before anything else runs (first in the chain); filters listings."""

    name = "policy"
    methods = frozenset({"tools/call", "tools/list"})

    def __init__(self, policy: Policy, lookup: ToolLookup) -> None:
        self.policy = policy
        self.lookup = lookup

    async def on_request(self, call: Call) -> None:
        if call.method != "tools/call":
            return
        name = call.params["name"]
        denial = self.policy.denial(call.session.identity, name, await self.lookup(name))
        if denial is not None:
            call.refused_by = "policy"
            raise denial

    async def on_response(self, call: Call) -> None:
        if call.method == "tools/list" and isinstance(call.result, types.ListToolsResult):
            tools = self.policy.visible(call.session.identity, call.result.tools)
            call.result = call.result.model_copy(update={"tools": tools})


def from_config(config: PolicyConfig, separator: str) -> Policy:
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
    return Policy(rules, separator=separator)
