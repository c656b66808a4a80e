"""The TOML editor (Codex's config.toml) changes one entry key by key, in whatever form the file keeps its servers,
and leaves the rest as it was."""

import tomllib

import pytest

from gateway.app.toml_edit import entries, put
from gateway.app.userfile import Invalid


def test_an_existing_section_is_changed_key_by_key_keeping_its_comments_and_subtables() -> None:
    mine = (
        "# mine\n[mcp_servers.gateway]\n"
        'command = "old"  # the one before\nargs = ["serve"]\nstartup_timeout_sec = 20\n\n'
        '[mcp_servers.gateway.env]\nTOKEN = "x"\n\n[profiles.fast]\nmodel = "o4-mini"\n'
    )
    entry = {"url": "http://h/mcp", "startup_timeout_sec": 20, "env": {"TOKEN": "x"}}
    edited = put(mine, "mcp_servers", "gateway", entry)
    assert tomllib.loads(edited)["mcp_servers"]["gateway"] == entry
    assert edited.startswith("# mine\n[mcp_servers.gateway]\n")
    assert edited.endswith('[mcp_servers.gateway.env]\nTOKEN = "x"\n\n[profiles.fast]\nmodel = "o4-mini"\n')
    assert "command" not in edited and "args" not in edited


def test_dotted_keys_and_a_file_without_servers_get_a_section_of_their_own() -> None:
    dotted = put('mcp_servers.other.command = "x"\n', "mcp_servers", "gateway", {"url": "u"})
    assert dotted.startswith('mcp_servers.other.command = "x"\n')
    assert tomllib.loads(dotted)["mcp_servers"] == {"other": {"command": "x"}, "gateway": {"url": "u"}}
    fresh = put('model = "o3"\n', "mcp_servers", "gateway", {"url": "u"})
    assert fresh == 'model = "o3"\n\n[mcp_servers.gateway]\nurl = "u"\n'  # no empty [mcp_servers] above it


def test_a_servers_key_that_is_not_a_table_and_broken_toml_are_refused() -> None:
    with pytest.raises(Invalid, match=r"^expected mcp_servers to be a table, found int$"):
        entries("mcp_servers = 3\n", "mcp_servers")
    with pytest.raises(
        Invalid, match=r"^not valid TOML \(Expected '=' after a key in a key/value pair \(at line 2, column 8\)\)$"
    ):
        entries("[mcp_servers.a]\ncommand\n", "mcp_servers")


def test_a_crlf_file_gets_crlf_lines() -> None:
    mine = 'model = "o3"\r\n[mcp_servers.a]\r\ncommand = "x"\r\n'
    edited = put(mine, "mcp_servers", "gateway", {"url": "u"})
    assert edited == mine + '\r\n[mcp_servers.gateway]\r\nurl = "u"\r\n'
