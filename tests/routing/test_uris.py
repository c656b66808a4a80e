"""Exposed resource URIs: `<server>+<uri>`, MCP Apps' `ui://<server>+…`, hosted schemes and the bare server."""

import pytest

from gateway.routing.uris import Uris

URIS = Uris({"sysmon", "files", "think"})


@pytest.mark.parametrize(
    ("server", "original", "exposed"),
    [
        ("files", "file:///etc/motd", "files+file:///etc/motd"),
        ("sysmon", "ui://system-monitor/mcp-app.html", "ui://sysmon+system-monitor/mcp-app.html"),
        ("sysmon", "ui://dashboard", "ui://sysmon+dashboard"),
        ("sysmon", "ui://{view}/app.html", "ui://sysmon+{view}/app.html"),
        ("think", "workflow://plan", "workflow://plan"),
    ],
)
def test_every_uri_maps_to_an_exposed_uri_and_back(server: str, original: str, exposed: str) -> None:
    assert URIS.exposed(server, original) == exposed
    assert URIS.owner(exposed) == (server, original)


def test_an_apps_resource_keeps_the_ui_scheme_hosts_require() -> None:
    # The extension's own host helper (getToolUiResourceUri) throws on a resourceUri not starting with ui://.
    assert URIS.exposed("sysmon", "ui://system-monitor/mcp-app.html").startswith("ui://")


def test_a_ui_uri_naming_no_known_server_has_no_owner_but_the_bare_servers() -> None:
    assert URIS.owner("ui://nobody+x/app.html") is None
    assert URIS.owner("ui://system-monitor/mcp-app.html") is None
    bare = Uris({"sysmon", "files"}, bare="files")
    assert bare.owner("ui://system-monitor/mcp-app.html") == ("files", "ui://system-monitor/mcp-app.html")
    assert bare.exposed("files", "ui://own/app.html") == "ui://own/app.html"
