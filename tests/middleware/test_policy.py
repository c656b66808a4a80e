"""Tool policy rules: who they apply to, deny over allow, allow lists adding up, read-only by annotations,
the gateway's own tools, and denials that name the rule."""

import mcp.types as types

from gateway.config import PolicyConfig
from gateway.middleware.policy import Policy, PolicyDenied, Rule, Subject, from_config
from gateway.session import Identity

ALICE = Identity("alice", "static", "alice", groups=frozenset({"dev"}))
BOB = Identity("bob", "static", "bob", groups=frozenset({"interns"}))
CAROL = Identity("carol", "jwt", "u-3", issuer="https://idp")


def tool(name: str, *, read_only: bool | None = None, destructive: bool | None = None) -> Subject:
    """A tool `server.original` exposed under that name."""
    notes = types.ToolAnnotations(read_only_hint=read_only, destructive_hint=destructive)
    server, _, original = name.partition(".")
    return Subject(
        "tool", server, name, original, types.Tool(name=name, input_schema={"type": "object"}, annotations=notes)
    )


POLICY = Policy(
    [
        Rule("no-wipe", deny=("*.wipe", "*.delete_*")),
        Rule("dev-gitlab", groups=("dev",), allow=("gitlab.*",)),
        Rule("dev-jira", identities=("ali*",), allow=("jira.get_*",)),
        Rule("interns", groups=("interns",), read_only=True),
    ]
)


def allowed(identity: Identity, *subjects: Subject, policy: Policy = POLICY) -> list[str]:
    return [s.exposed for s in subjects if policy.denial(identity, s) is None]


def denied(identity: Identity, subject: Subject, policy: Policy = POLICY) -> PolicyDenied:
    denial = policy.denial(identity, subject)
    assert denial is not None
    return denial


def test_a_deny_glob_refuses_for_everyone_and_names_the_rule_and_the_glob() -> None:
    denial = denied(CAROL, tool("gitlab.delete_branch"))
    assert denial.rule == "no-wipe"
    assert "'*.delete_*'" in str(denial) and "carol" in str(denial) and "'no-wipe'" in str(denial)


def test_allow_lists_of_the_rules_that_apply_add_up() -> None:
    tools = [tool("gitlab.get_mr"), tool("jira.get_issue"), tool("jira.create_issue"), tool("git.status")]
    assert allowed(ALICE, *tools) == ["gitlab.get_mr", "jira.get_issue"]
    denial = denied(ALICE, tool("git.status"))
    assert "dev-gitlab, dev-jira" in str(denial) and "no allow list" in str(denial)


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
    denial = denied(BOB, tool("k.plain"))
    assert denial.rule == "interns" and "readOnlyHint" in str(denial)


def test_the_gateway_s_own_tools_stay_outside_allow_lists_and_read_only_but_not_deny() -> None:
    own = [tool("think.next"), tool("gateway.read_output"), tool("prompt.say")]
    assert allowed(ALICE, *own) == allowed(BOB, *own) == ["think.next", "gateway.read_output", "prompt.say"]
    strict = Policy([Rule("no-think", deny=("think.*",))])
    assert denied(ALICE, tool("think.next"), strict).rule == "no-think"


def test_rules_from_config_are_named_by_position_when_unnamed() -> None:
    policy = from_config(PolicyConfig.model_validate({"rules": [{"deny": ["k.*"]}]}))
    assert denied(CAROL, tool("k.echo"), policy).rule == "policy.rules[0]"
    assert not from_config(PolicyConfig())


def test_globs_match_the_full_name_of_a_tool_whose_exposed_name_was_shortened_or_unprefixed() -> None:
    policy = Policy([Rule("no-deletes", deny=("*.*delete*",)), Rule("u-only", allow=("u.*",))])
    long = "purge_" + "x" * 70 + "_delete_everything"
    shortened = Subject("tool", "u", "u.purge_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx-1a2b3c4d", long)
    denial = denied(CAROL, shortened, policy)
    assert denial.rule == "no-deletes" and f"matched on server 'u''s name {long!r}" in str(denial)
    bare = Subject("tool", "u", "whoami", "whoami")  # `prefix: false`: exposed without its server
    assert allowed(CAROL, bare, policy=policy) == ["whoami"]


def test_the_gateway_s_own_tools_are_known_by_their_server_under_any_separator() -> None:
    policy = Policy([Rule("k-only", allow=("k.*",))])
    own = Subject("tool", "gateway", "gateway_find_tools", "find_tools")
    assert allowed(CAROL, own, Subject("tool", "k", "k_echo", "echo"), policy=policy) == [
        "gateway_find_tools",
        "k_echo",
    ]
    assert denied(CAROL, own, Policy([Rule("no-find", deny=("gateway.find_tools",))])).rule == "no-find"


def test_prompts_and_resources_are_matched_by_name_and_uri_and_read_only_keeps_them() -> None:
    policy = Policy([Rule("u-only", allow=("u.*",)), Rule("interns", groups=("interns",), read_only=True)])
    prompt = Subject("prompt", "t", "t.greet", "greet")
    resource = Subject("resource", "t", "t+test://static-text", "test://static-text")
    ours = Subject("resource", "u", "u+test://static-text", "test://static-text")
    assert denied(CAROL, prompt, policy).subject.kind == "prompt"
    assert str(denied(CAROL, resource, policy)).startswith("Resource 't+test://static-text' is not available to carol")
    assert allowed(BOB, ours, Subject("prompt", "u", "u.greet", "greet"), policy=policy) == [
        "u+test://static-text",
        "u.greet",
    ]
