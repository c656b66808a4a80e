"""The pipeline is one list: `default_chain` returns every middleware in order, and the tables that describe it
(the package docstring, docs/results.md) say the same order."""

import re
from pathlib import Path

import gateway.middleware
from gateway.app.gateway import Gateway
from gateway.config import load_config
from tests.harness import ROOT, write_config

TABLE_ROW = re.compile(r"^\| (\d+) \| (\w+) \|", re.MULTILINE)


def table(text: str) -> list[str]:
    rows = [(int(n), name) for n, name in TABLE_ROW.findall(text)]
    assert [n for n, _ in rows] == list(range(1, len(rows) + 1)), rows
    return [name for _, name in rows]


def test_the_whole_chain_is_built_in_one_list_in_the_documented_order(tmp_path: Path) -> None:
    config = write_config(
        tmp_path, {}, policy={"rules": [{"deny": ["k.*"]}]}, audit={"path": str(tmp_path / "audit.jsonl")}
    )
    built_gateway = Gateway(load_config(config), record=True)
    built = [mw.name for mw in built_gateway.pipeline.chain]
    assert built_gateway.audit is not None
    built_gateway.audit.close()  # opened by the constructor; `running()` would close it
    documented = table(gateway.middleware.__doc__ or "")
    assert built == documented
    assert built == [
        "wake",
        "exposure",
        "policy",
        "versions",
        "observe",
        "bootstrap",
        "steering",
        "size_guard",
        "render",
        "audit",
        "record",
    ]


def test_the_docs_list_the_pipeline_as_default_chain_builds_it() -> None:
    readme = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    section = readme.split("<!-- pipeline -->")[1]
    assert table(section) == table(gateway.middleware.__doc__ or "")


def test_a_config_without_rules_audit_or_think_leaves_only_those_out(tmp_path: Path) -> None:
    names = [
        mw.name for mw in Gateway(load_config(write_config(tmp_path, {}, think={"enabled": False}))).pipeline.chain
    ]
    assert names == ["wake", "exposure", "versions", "bootstrap", "steering", "size_guard", "render"]
