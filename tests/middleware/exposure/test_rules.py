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
    assert resolve(CONFIG, ".", "cursor-vscode") == Rule("auto", 20, 32_000, "_", 200, True, "cursor*")
    assert resolve(CONFIG, ".", "claude-code") == Rule("search", 40, 32_000, ".", 200, False, "*")


def test_a_client_that_has_not_said_its_name_gets_the_defaults_not_a_catch_all_rule() -> None:
    assert resolve(CONFIG, ".", None) == Rule("auto", 40, 32_000, ".", 200, True)
