"""What one session's `tools/list` holds (`Exposure`), in process over a catalog of a downstream's tools and the
gateway's own: `all` lists what the policy lets the session see, `search` the way in and pins with found tools
promoted (least recently used out first), `auto` everything while it fits and over budget the way in then the most
used up to both limits; a client rule picks its own separator; search never finds what the policy hides."""

import mcp.types as types

from gateway.config import ExposureConfig, NamespaceConfig
from gateway.errors import GatewayError
from gateway.middleware.exposure.listed import definition_chars
from gateway.middleware.exposure.view import Exposure
from gateway.routing.catalog import Catalog, Entry
from gateway.session import Session

OWN = ["gateway.find_tools", "gateway.call_tool", "gateway.status", "think.plan", "think.next"]
JIRA = [f"jira.tool_{i:02d}" for i in range(12)]


def catalog() -> Catalog:
    tools = {}
    for name in [*OWN, *JIRA]:
        server, _, original = name.partition(".")
        described = f"Does {original.replace('_', ' ')} in {server}. " * 5
        item = types.Tool(name=original, description=described, input_schema={"type": "object"})
        tools[name] = Entry(name, server, original, item)
    return Catalog(tools=tools)


def exposure(denied: frozenset[str] = frozenset(), **config: object) -> Exposure:
    def denial(session: Session, entry: Entry) -> GatewayError | None:
        return GatewayError(f"{entry.exposed} is denied") if entry.exposed in denied else None

    return Exposure(ExposureConfig.model_validate(config), NamespaceConfig(), denial, workflows=lambda: False)


def listed(view: Exposure, cat: Catalog, session: Session) -> list[str]:
    return [tool.name for tool in view.listed(cat, session)]


def test_all_lists_every_tool_the_policy_lets_the_session_see_in_catalog_order() -> None:
    cat = catalog()
    view = exposure(frozenset({"jira.tool_03"}), mode="all")
    shown = listed(view, cat, Session("s"))
    assert shown == [n for n in [*OWN, *JIRA] if n != "jira.tool_03"]


def test_search_lists_the_way_in_and_pins_and_found_tools_join_least_recently_used_out_first() -> None:
    cat = catalog()
    view = exposure(mode="search", pin=["jira.tool_00"], max_tools=6)
    session = Session("s")
    way_in = ["gateway.find_tools", "gateway.call_tool", "think.plan", "think.next", "jira.tool_00"]
    assert listed(view, cat, session) == way_in
    assert view.hidden(cat, session, "gateway.status")  # callable by name, found by find_tools, not listed
    assert view.promote(cat, session, ["jira.tool_05"]) is True
    assert view.promote(cat, session, ["jira.tool_05"]) is False  # no change: nobody is told the list changed
    assert view.promote(cat, session, ["jira.tool_07"]) is True  # room for one: 5 of max_tools 6 are the way in
    assert listed(view, cat, session) == [*way_in, "jira.tool_07"]


def test_auto_lists_all_while_it_fits_and_over_budget_the_way_in_then_the_most_used_within_both_limits() -> None:
    cat = catalog()
    roomy, session = exposure(mode="auto"), Session("s")
    assert len(listed(roomy, cat, session)) == len(OWN) + len(JIRA)
    tight = exposure(mode="auto", max_tools=8)
    session = Session("s")
    tight.view(session).used = ["jira.tool_09", "gateway.status"]
    shown = listed(tight, cat, session)
    assert shown == [
        "gateway.find_tools",
        "gateway.call_tool",
        "think.plan",
        "think.next",
        "jira.tool_00",
        "jira.tool_01",
        "jira.tool_02",
        "jira.tool_09",
    ]  # the way in, the most used (own tools never fill), then catalog order, listed in catalog order
    # The character budget holds as the tool budget does: half of the full list's characters, half-ish the tools.
    full = sum(definition_chars(t) for t in roomy.listed(cat, Session("f")))
    narrow = exposure(mode="auto", max_list_chars=full // 2)
    listing = narrow.listed(cat, Session("n"))
    assert sum(definition_chars(t) for t in listing) <= full // 2
    assert {"gateway.find_tools", "think.next"} <= {t.name for t in listing}
    assert len(OWN) < len(listing) < len(OWN) + len(JIRA)


def test_the_size_auto_weighs_is_the_full_lists_and_a_new_catalog_is_weighed_again() -> None:
    cat, view, session = catalog(), exposure(mode="all"), Session("s")
    rule = view.view(session).rule
    full = [definition_chars(t) for t in view.listed(cat, session)]
    assert view.full_size(cat, rule) == (len(full), sum(full))
    assert view.full_size(cat, rule) == (len(full), sum(full))  # summed once, read again
    smaller = Catalog(tools={n: e for n, e in cat.tools.items() if n != "jira.tool_11"})
    assert view.full_size(smaller, rule) == (len(full) - 1, sum(full[:-1]))


def test_a_client_rule_gives_that_client_its_own_separator_and_a_reload_resolves_it_again() -> None:
    cat = catalog()
    rules = [{"client": "cursor*", "separator": "_", "mode": "all"}]
    view = exposure(mode="search", clients=rules)
    cursor = Session("c", client="cursor-vscode")
    assert "jira_tool_04" in listed(view, cat, cursor)
    assert "jira.tool_04" not in listed(view, cat, Session("other"))
    view.reconfigure(ExposureConfig.model_validate({"mode": "all"}))
    assert "jira.tool_04" in listed(view, cat, cursor)


def test_search_never_finds_what_the_policy_hides() -> None:
    cat = catalog()
    view = exposure(frozenset({"jira.tool_04"}), mode="search")
    open_view = exposure(mode="search")
    assert "jira.tool_04" in [hit.name for hit in open_view.search(cat, Session("s"), "tool_04", limit=20).hits]
    assert "jira.tool_04" not in [hit.name for hit in view.search(cat, Session("s"), "tool_04", limit=20).hits]


def test_what_auto_shows_a_session_is_weighed_once_per_change_not_per_call() -> None:
    cat, session = catalog(), Session("s")
    asked: list[str] = []
    denied: set[str] = set()

    def denial(_session: Session, entry: Entry) -> GatewayError | None:
        asked.append(entry.exposed)
        return GatewayError("denied") if entry.exposed in denied else None

    view = Exposure(ExposureConfig(mode="auto", max_tools=8), NamespaceConfig(), denial, workflows=lambda: False)
    view.view(session).used = ["jira.tool_09"]
    assert view.hidden(cat, session, "jira.tool_10") and not view.hidden(cat, session, "jira.tool_09")
    weighed = len(asked)
    for _ in range(5):  # each call of a tool asks whether it is hidden
        assert not view.hidden(cat, session, "jira.tool_09")
    assert len(asked) == weighed  # nothing it reads changed: not weighed again
    assert view.promote(cat, session, ["jira.tool_10"]) and not view.hidden(cat, session, "jira.tool_10")
    view.view(session).used = ["jira.tool_11"]  # the next tools/list read the identity's use again
    assert view.hidden(cat, session, "jira.tool_09") and not view.hidden(cat, session, "jira.tool_11")
    denied.add("jira.tool_11")
    view.reconfigure(view.config)  # a reload with the same exposure section: the policy may have changed
    assert view.hidden(cat, session, "jira.tool_11")
    assert not view.hidden(catalog(), session, "jira.tool_00")  # a new catalog is weighed anew
