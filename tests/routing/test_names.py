"""Exposed names: short ones kept, long ones shortened to exactly the limit, collisions resolved, always unique."""

import random
import re
from collections import Counter

from gateway.routing.names import assign

LONG = "a_really_long_tool_name_that_goes_on_and_on_past_the_sixty_four_char_limit"


def test_names_that_fit_are_server_separator_name() -> None:
    assert assign([("git", "git_status"), ("time", "now")], ".", 64) == {
        ("git", "git_status"): "git.git_status",
        ("time", "now"): "time.now",
    }


def test_a_name_exactly_at_the_limit_is_kept() -> None:
    name = "t" * (64 - len("srv."))
    assert assign([("srv", name)], ".", 64) == {("srv", name): f"srv.{name}"}


def test_long_names_are_shortened_to_exactly_the_limit_keeping_a_readable_prefix() -> None:
    exposed = assign([("srv", LONG), ("srv", LONG + "_x")], ".", 64)
    a, b = exposed["srv", LONG], exposed["srv", LONG + "_x"]
    assert len(a) == len(b) == 64
    assert a != b
    assert a.startswith(f"srv.{LONG}"[:40]) and b.startswith(f"srv.{LONG}"[:40])


def test_shortening_is_deterministic_and_independent_of_order_and_other_names() -> None:
    pairs = [("srv", LONG), ("srv", LONG + "_x"), ("other", "echo")]
    first = assign(pairs, ".", 64)
    assert assign(list(reversed(pairs)), ".", 64) == first
    # Adding an unrelated server does not rename existing tools (clients may have cached them).
    assert assign([*pairs, ("new", "tool")], ".", 64).items() >= first.items()


def test_constructed_collision_is_resolved_for_both_names() -> None:
    # With "_" as separator, server "a_b" + tool "c" and server "a" + tool "b_c" both read "a_b_c".
    exposed = assign([("a_b", "c"), ("a", "b_c"), ("a", "d")], "_", 64)
    assert len(set(exposed.values())) == 3
    assert exposed["a", "d"] == "a_d"  # uninvolved names keep their plain form
    for key in (("a_b", "c"), ("a", "b_c")):
        assert exposed[key] != "a_b_c" and exposed[key].startswith("a_b_c-")
        assert len(exposed[key]) <= 64
    assert assign([("a", "b_c"), ("a_b", "c"), ("a", "d")], "_", 64) == exposed


def test_a_long_name_whose_short_form_equals_a_real_name_still_gets_a_unique_name() -> None:
    # A downstream could expose a tool literally called like another tool's shortened form.
    shortened = assign([("srv", LONG)], ".", 64)["srv", LONG]
    real = shortened.removeprefix("srv.")
    exposed = assign([("srv", LONG), ("srv", real)], ".", 64)
    assert len(set(exposed.values())) == 2
    assert all(len(n) <= 64 for n in exposed.values())


def random_name(rng: random.Random, alphabet: str, longest: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(1, longest)))


def readable(name: str, separator: str) -> str:
    """A tool's part of its exposed name: as is beside a dot separator, else strict (`[A-Za-z0-9_-]`)."""
    return name if "." in separator else re.sub(r"[^A-Za-z0-9_-]", "_", name)


def test_without_a_dot_separator_every_name_suits_the_strictest_clients() -> None:
    pairs = [("think", "workflows.list"), ("think", "state.get"), ("srv", "a/b c:d"), ("srv", "é"), ("srv", LONG)]
    for separator in ("_", "-", "__"):
        exposed = assign(pairs, separator, 64)
        assert all(re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", n) for n in exposed.values()), exposed
    assert assign(pairs, "_", 64)["think", "workflows.list"] == "think_workflows_list"
    assert assign(pairs, ".", 64)["think", "workflows.list"] == "think.workflows.list"


def test_property_random_catalogs_give_unique_names_within_the_limit() -> None:
    rng = random.Random(20260728)
    for round_ in range(60):
        separator = rng.choice([".", "_", "__", "-"])
        limit = rng.choice([16, 24, 32, 64, 128])
        # A tiny alphabet and separator characters inside names make collisions common on purpose.
        servers = [random_name(rng, "ab_", 6) for _ in range(rng.randint(1, 6))]
        pairs = {(rng.choice(servers), random_name(rng, "ab_.-", rng.choice([3, 20, 150]))) for _ in range(300)}
        exposed = assign(pairs, separator, limit)
        context = f"round {round_}: sep={separator!r} limit={limit}"
        assert exposed.keys() == pairs, context
        duplicates = [n for n, c in Counter(exposed.values()).items() if c > 1]
        assert not duplicates, context
        assert all(len(n) <= limit for n in exposed.values()), context
        plain = Counter(f"{s}{separator}{readable(n, separator)}" for s, n in pairs)
        for (server, name), got in exposed.items():
            full = f"{server}{separator}{readable(name, separator)}"
            if len(full) <= limit and plain[full] == 1 and full not in set(exposed.values()) - {got}:
                assert got == full, context  # nothing clashed: the readable name is kept
            elif len(full) > limit:
                assert len(got) == limit, context
        shuffled = list(pairs)
        rng.shuffle(shuffled)
        assert assign(shuffled, separator, limit) == exposed, context
