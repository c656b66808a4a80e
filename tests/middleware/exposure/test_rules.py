"""A client's exposure rule: the first `clients` entry whose glob matches its name, laid over the defaults."""

from gateway.config.exposure import ClientRuleConfig, ExposureConfig
from gateway.middleware.exposure.rules import Rule, resolve

CONFIG = ExposureConfig(
    mode="auto",
    max_tools=40,
    description_chars=200,
    clients=[
        ClientRuleConfig(client="cursor*", max_tools=20, separator="_"),
        ClientRuleConfig(client="*", mode="search", promote=False),
    ],
)


def test_the_first_matching_rule_wins_and_its_unset_fields_keep_the_defaults() -> None:
    assert resolve(CONFIG, ".", "cursor-agent") == Rule("auto", 20, 32_000, "_", 200, True, "cursor*")
    assert resolve(CONFIG, ".", "gemini-cli-mcp-client") == Rule("search", 40, 32_000, ".", 200, False, "*")


def test_a_client_that_has_not_said_its_name_gets_the_defaults_not_a_catch_all_rule() -> None:
    assert resolve(CONFIG, ".", None) == Rule("auto", 40, 32_000, ".", 200, True)


def test_a_client_that_searches_natively_is_listed_everything_with_hints_by_default() -> None:
    default = ExposureConfig()
    for client in ("claude-code", "Visual Studio Code", "Visual Studio Code - Insiders", "github-copilot-developer",
                   "copilot-cli", "codex-mcp-client", "cursor-vscode"):  # fmt: skip
        rule = resolve(default, ".", client)
        assert (rule.mode, rule.native) == ("all", True), client
    for other in ("gemini-cli-mcp-client", "Cline", "windsurf-client", "mcp-inspector", None):
        rule = resolve(default, ".", other)
        assert (rule.mode, rule.native) == ("auto", False), other


def test_a_client_rule_overrides_the_native_search_table_either_way() -> None:
    config = ExposureConfig(
        clients=[
            ClientRuleConfig(client="claude-code", mode="auto"),
            ClientRuleConfig(client="cursor-vscode", native_search=False),
            ClientRuleConfig(client="my-agent", native_search=True),
        ]
    )
    claude = resolve(config, ".", "claude-code")
    assert (claude.mode, claude.native, claude.told) == ("auto", True, True)  # a budget, still the hints
    assert (resolve(config, ".", "cursor-vscode").mode, resolve(config, ".", "cursor-vscode").native) == ("auto", False)
    assert (resolve(config, ".", "my-agent").mode, resolve(config, ".", "my-agent").native) == ("all", True)
    extended = ExposureConfig(native_search=["*-agent"])
    assert resolve(extended, ".", "my-agent").native and not resolve(extended, ".", "claude-code").native
