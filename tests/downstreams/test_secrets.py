"""Per-user secret sources: request headers, a private folder (permissions checked), the OS keyring, the
environment (stdio's OS user only), and the error that names the secret and how to provide it."""

from collections.abc import Iterator
from pathlib import Path

import keyring
import pytest
from keyring.backend import KeyringBackend

from gateway.config import HttpServerConfig, StdioServerConfig
from gateway.downstreams.secrets import (
    DirSource,
    EnvSource,
    HeaderSource,
    KeyringSource,
    MissingSecret,
    Secrets,
    expand,
    references,
)
from gateway.session import Identity

ALICE = Identity("alice", "static", "alice")
ME = Identity("me", "os", "me")


def private_dir(root: Path, who: str, **secrets: str) -> Path:
    root.chmod(0o700)
    folder = root / who
    folder.mkdir(mode=0o700)
    for name, value in secrets.items():
        (folder / name).write_text(value + "\n")
        (folder / name).chmod(0o600)
    return root


def test_a_private_file_per_identity_is_read_without_its_newline(tmp_path: Path) -> None:
    secrets = Secrets([DirSource(private_dir(tmp_path, "alice", GITLAB_TOKEN="glpat-alice"))])
    assert secrets.resolve("gitlab", ALICE, ["GITLAB_TOKEN"], {}) == {"GITLAB_TOKEN": "glpat-alice"}


def test_a_file_others_can_read_is_refused_and_the_error_says_how_to_fix_it(tmp_path: Path) -> None:
    root = private_dir(tmp_path, "alice", GITLAB_TOKEN="glpat-alice")
    (root / "alice" / "GITLAB_TOKEN").chmod(0o644)
    with pytest.raises(MissingSecret) as missing:
        Secrets([DirSource(root)]).resolve("gitlab", ALICE, ["GITLAB_TOKEN"], {})
    text = str(missing.value)
    assert "mode 644" in text and f"chmod 600 {root / 'alice' / 'GITLAB_TOKEN'}" in text
    assert "glpat-alice" not in text


def test_an_identity_name_cannot_walk_out_of_the_folder(tmp_path: Path) -> None:
    (tmp_path / "secrets").mkdir()
    root = private_dir(tmp_path / "secrets", "bob", X="bob's")
    sneaky = Identity("../secrets/bob", "jwt", "u-9")
    with pytest.raises(MissingSecret, match="cannot name a folder"):
        Secrets([DirSource(root)]).resolve("s", sneaky, ["X"], {})


def test_the_header_source_reads_this_request_s_value_and_the_error_names_every_way() -> None:
    secrets = Secrets([HeaderSource("X-Gateway-Secret-"), EnvSource()])
    assert secrets.resolve("jira", ALICE, ["JIRA_TOKEN"], {"JIRA_TOKEN": "from-header"}) == {
        "JIRA_TOKEN": "from-header"
    }
    with pytest.raises(MissingSecret) as missing:
        secrets.resolve("jira", ALICE, ["JIRA_TOKEN"], {})
    text = str(missing.value)
    assert "'jira' needs the secret JIRA_TOKEN for alice" in text
    assert "'X-Gateway-Secret-JIRA-TOKEN: <value>'" in text and "set JIRA_TOKEN in the environment" in text


def test_the_environment_serves_only_the_os_user(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JIRA_TOKEN", "the-gateway-s-own")
    secrets = Secrets([EnvSource()])
    assert secrets.resolve("jira", ME, ["JIRA_TOKEN"], {}) == {"JIRA_TOKEN": "the-gateway-s-own"}
    with pytest.raises(MissingSecret):
        secrets.resolve("jira", ALICE, ["JIRA_TOKEN"], {})  # an HTTP user never gets the process's environment


class MemoryKeyring(KeyringBackend):
    priority = 1

    entries: dict[tuple[str, str], str]

    def __init__(self) -> None:
        self.entries = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.entries.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.entries[service, username] = password

    def delete_password(self, service: str, username: str) -> None:
        del self.entries[service, username]


@pytest.fixture
def memory_keyring() -> Iterator[MemoryKeyring]:
    before = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    yield backend
    keyring.set_keyring(before)


def test_the_os_keyring_is_looked_up_by_identity_and_name(memory_keyring: MemoryKeyring) -> None:
    memory_keyring.set_password("mcp-gateway", "alice/GITLAB_TOKEN", "glpat-kr")
    secrets = Secrets([KeyringSource("mcp-gateway")])
    assert secrets.resolve("gitlab", ALICE, ["GITLAB_TOKEN"], {}) == {"GITLAB_TOKEN": "glpat-kr"}
    with pytest.raises(MissingSecret, match="user 'alice/JIRA_TOKEN'"):
        secrets.resolve("jira", ALICE, ["JIRA_TOKEN"], {})


def test_user_references_are_found_and_expanded_in_env_args_url_and_headers() -> None:
    stdio = StdioServerConfig(
        transport="stdio", command="x", args=["--token=${user:A}"], env={"T": "${user:B}", "HOME": "/h"}
    )
    http = HttpServerConfig(transport="http", url="http://h/mcp", headers={"Authorization": "Bearer ${user:C}"})
    assert references(stdio) == {"A", "B"} and references(http) == {"C"}
    filled = expand(stdio, {"A": "a1", "B": "b1"})
    assert isinstance(filled, StdioServerConfig) and filled.args == ["--token=a1"] and filled.env["T"] == "b1"
    assert expand(http, {"C": "c1"}).headers == {"Authorization": "Bearer c1"}  # type: ignore[union-attr]
