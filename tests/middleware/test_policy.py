"""Tool policy rules: who they apply to, deny over allow, allow lists adding up, read-only by annotations,
the gateway's own tools, and denials that name the rule."""

import mcp.types as types

from gateway.config import PolicyConfig
from gateway.middleware.policy import Policy, Rule, from_config
from gateway.session import Identity

ALICE = Identity("alice", "static", "alice", groups=frozenset({"dev"}))
BOB = Identity("bob", "static", "bob", groups=frozenset({"interns"}))
CAROL = Identity("carol", "jwt", "u-3", issuer="https://idp")


def tool(name: str, *, read_only: bool | None = None, destructive: bool | None = None) -> types.Tool:
    notes = types.ToolAnnotations(read_only_hint=read_only, destructive_hint=destructive)
    return types.Tool(name=name, input_schema={"type": "object"}, annotations=notes)


POLICY = Policy(
    [
        Rule("no-wipe", deny=("*.wipe", "*.delete_*")),
        Rule("dev-gitlab", groups=("dev",), allow=("gitlab.*",)),
        Rule("dev-jira", identities=("ali*",), allow=("jira.get_*",)),
        Rule("interns", groups=("interns",), read_only=True),
    ]
)


def allowed(identity: Identity, *tools: types.Tool) -> list[str]:
    return [t.name for t in POLICY.visible(identity, tools)]


def test_a_deny_glob_refuses_for_everyone_and_names_the_rule_and_the_glob() -> None:
    denial = POLICY.denial(CAROL, "gitlab.delete_branch", tool("gitlab.delete_branch"))
    assert denial is not None and denial.rule == "no-wipe"
    assert "'*.delete_*'" in str(denial) and "carol" in str(denial) and "'no-wipe'" in str(denial)


def test_allow_lists_of_the_rules_that_apply_add_up() -> None:
    tools = [tool("gitlab.get_mr"), tool("jira.get_issue"), tool("jira.create_issue"), tool("git.status")]
    assert allowed(ALICE, *tools) == ["gitlab.get_mr", "jira.get_issue"]
    denial = POLICY.denial(ALICE, "git.status", tool("git.status"))
    assert denial is not None and "dev-gitlab, dev-jira" in str(denial) and "no allow list" in str(denial)


def test_an_identity_no_rule_names_sees_everything_not_denied() -> None:
    assert allowed(CAROL, tool("git.status"), tool("k.wipe")) == ["git.status"]


def test_read_only_keeps_only_tools_annotated_read_only_and_not_destructive() -> None:
    tools = [
        tool("k.get", read_only=True),
        tool("k.put", read_only=False),
        tool("k.plain"),
        tool("k.odd", read_only=True, destructive=True),
    ]
    assert allowed(BOB, *tools) == ["k.get"]
    denial = POLICY.denial(BOB, "k.plain", tool("k.plain"))
    assert denial is not None and denial.rule == "interns" and "readOnlyHint" in str(denial)


def test_the_gateway_s_own_tools_stay_outside_allow_lists_and_read_only_but_not_deny() -> None:
    own = [tool("think.next"), tool("gateway.read_output"), tool("prompt.say")]
    assert allowed(ALICE, *own) == allowed(BOB, *own) == ["think.next", "gateway.read_output", "prompt.say"]
    strict = Policy([Rule("no-think", deny=("think.*",))])
    assert strict.denial(ALICE, "think.next", tool("think.next")) is not None


def test_rules_from_config_are_named_by_position_when_unnamed() -> None:
    policy = from_config(PolicyConfig.model_validate({"rules": [{"deny": ["k.*"]}]}), ".")
    denial = policy.denial(CAROL, "k.echo", tool("k.echo"))
    assert denial is not None and denial.rule == "policy.rules[0]"
    assert not from_config(PolicyConfig(), ".")
